/**
 * INVITE magic links: generate (the link row and its mail in one transaction, replacing the user's
 * earlier INVITE for the application), revoke, and the landing's steps for INVITE and LOGIN links
 * alike (inspect without using, consume atomically, the authenticator-code or recovery-code step,
 * completion: the customer's SSO session opened, then per application type).
 * The token is 256 random bits; only its SHA-256 is stored, and it leaves this module only in the mail.
 */
import { randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { Kysely } from 'kysely';
import { actingUser, type AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound, RateLimited, UserNotFound } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Outbox } from '../../mail/outbox.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import { reserveForWrite } from '../../store/throttles/reserve-for-write.ts';
import type { Limit, ThrottleStore } from '../../store/throttles/types.ts';
import { urlProblem } from '../applications/urls.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { MfaService } from '../mfa/service.ts';
import type { PasskeysService } from '../passkeys/service.ts';
import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { PoliciesService } from '../policies/service.ts';
import { unsolicitedAnswer, type SamlService } from '../saml/service.ts';
import type { AuthMethod } from '../sso-sessions/types.ts';
import type { BrowserInfo, SsoSessionsService } from '../sso-sessions/service.ts';
import type { UsersService } from '../users/service.ts';
import type { User } from '../users/types.ts';
import type { Application } from '../applications/types.ts';
import type { SignInEvents } from '../sign-in/events.ts';
import { ID_TOKEN_TTL_SECONDS, idTokenClaims } from '../sign-in/id-token.ts';
import { chooseRedirect, redirectOrigins, withQueryParameter } from './redirect.ts';
import * as repo from './repo.ts';
import {
  EXPIRY_DEFAULT, EXPIRY_MAX, EXPIRY_MIN, LOGIN_LINK_MINUTES, LOGIN_LINK_TYPE, USERNAME_MAX, USERNAME_MIN,
  type Completion, type GenerateInput, type LiveLink, type MagicLink, type RecentLink,
} from './types.ts';

export const NO_INVITE_MESSAGE = 'No active invite link was found for the user.';
/** How long a consumed link waits for its authenticator code, and how many codes it may try. */
export const PENDING_LOGIN_MS = 5 * 60_000;
export const PENDING_MAX_ATTEMPTS = 5;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * E-mail bombing: at most this many generates per user (any application) per hour. Counted in the
 * throttle store (the database, or Redis when configured) with the logins' atomic reservation, so
 * concurrent generates on any node stay within the cap; the cap-reaching generate blocks the user's
 * key for the window.
 */
export const GENERATE_CAP_PER_USER = 10;
/** Within KEEP_KEYS_MS (store/throttles/types.ts), so the database store's purge keeps the count. */
export const GENERATE_CAP_WINDOW_MS = 60 * 60_000;
export const GENERATE_CAP: Limit = { budget: GENERATE_CAP_PER_USER, delayMs: (n) => (n >= GENERATE_CAP_PER_USER ? GENERATE_CAP_WINDOW_MS : 0) };

export interface MagicLinksDeps {
  db: Kysely<Database>;
  throttles: ThrottleStore;
  clock: Clock;
  audit: AuditRecorder;
  /** LATCHKEY_PUBLIC_URL without a trailing slash: links are built from it, never from request headers. */
  publicUrl: string;
  users: UsersService;
  applications: ApplicationsService;
  policies: PoliciesService;
  mfa: Pick<MfaService, 'checkLoginOtp' | 'hasActiveAuthenticator'>;
  outbox: Outbox;
  /** Called after a generate commits (the mail worker's kick). */
  mailEnqueued?: () => void;
  signJwt(customerId: number, claims: JWTPayload, options: { ttlSeconds: number }): Promise<string>;
  /** The customer's OpenID issuer (the id_token's iss); its path is the SSO cookie's. */
  issuer(customerKey: string): string;
  /** Completing a sign-in opens the customer's SSO session in this browser. */
  ssoSessions: Pick<SsoSessionsService, 'open' | 'cookie'>;
  /** The user's one-time recovery codes (the second-factor step's other way); absent: no such way. */
  recoveryCodes?: { use(customerId: number, userId: number, code: string): Promise<boolean> };
  /** Builds a SAML application's Response (IdP-initiated: the INVITE link's sign-in). */
  saml: Pick<SamlService, 'respond'>;
  /** The users' passkeys: the second factor of PASSKEY and ANY policies. */
  passkeys: Pick<PasskeysService, 'count' | 'authenticationOptions' | 'authenticate'>;
  /** The second factor refused (a wrong code, passkey or recovery code) is signin.failed, as at the hosted sign-in. */
  signInEvents: Pick<SignInEvents, 'record'>;
}

/** The ways the second-factor step offers: an authenticator code, a passkey, or both (ANY, when the user has both). */
export interface SecondFactorWays { code: boolean; passkey: boolean }

/**
 * Why the landing cannot go on: a dead link, or a policy asking for a second factor the user lacks
 * (the application's name, and which: AUTHENTICATOR_APP, PASSKEY, or ANY for either).
 */
export type Refusal = 'dead' | { noAuthenticator: string; missing: 'AUTHENTICATOR_APP' | 'PASSKEY' | 'ANY' };

export type SecondFactorResult =
  | { ok: true; live: LiveLink }
  | { ok: false; reason: 'ended' }
  | { ok: false; reason: 'wrong_code' | 'replayed' | 'otp_required' | 'wrong_passkey'; attemptsLeft: number; applicationName: string; redirectOrigins: string[] };

export interface MagicLinksService {
  /**
   * @throws Invalid (a field, or the policy prerequisite), UserNotFound, NotFound('application').
   * Resolves once the link and its mail are committed.
   */
  generate(customerId: number, input: GenerateInput, correlationId: string, context: AuditContext): Promise<void>;
  /** @throws Invalid (username length), NotFound('invite link') when the user has no active INVITE (or does not exist). */
  revoke(customerId: number, username: string, context: AuditContext): Promise<number>;
  /** The user's latest links (newest first, at most `limit`), used, revoked and expired ones included. */
  listRecent(customerId: number, userId: number, limit: number): Promise<RecentLink[]>;
  /** The link if it can be used now; never uses it. */
  inspect(token: string): Promise<LiveLink | Refusal>;
  /** Uses the link (exactly one of concurrent callers gets it). */
  consume(token: string, context: AuditContext): Promise<LiveLink | Refusal>;
  /** Opens the second-factor step of a consumed link: the raw id for the browser's cookie. */
  startSecondFactor(live: LiveLink): Promise<string>;
  /** Checks a code for the pending login; the login ends on success or after the last attempt. */
  checkSecondFactor(pendingId: string, code: string, context: AuditContext): Promise<SecondFactorResult>;
  /** The application of a pending login that may still be finished (spends no attempt); undefined when it has ended. */
  pendingStep(pendingId: string): Promise<{ applicationName: string; redirectOrigins: string[]; ways: SecondFactorWays } | undefined>;
  /** Options for the pending login's passkey (its user's passkeys only); undefined when the login has ended or takes none. */
  passkeyOptions(pendingId: string): Promise<{ ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON } | undefined>;
  /** checkSecondFactor with an assertion of one of the user's passkeys, from the same attempts (success: amr hwk). */
  checkPasskey(pendingId: string, ceremonyId: string, response: AuthenticationResponseJSON, context: AuditContext): Promise<SecondFactorResult>;
  /** Whether the second-factor step offers a recovery code instead. */
  readonly acceptsRecoveryCodes: boolean;
  /** checkSecondFactor with one of the user's recovery codes, from the same attempts. */
  checkRecoveryCode(pendingId: string, code: string, context: AuditContext): Promise<SecondFactorResult>;
  /**
   * Opens (or replaces) the customer's SSO session for this browser with the factors shown, records the
   * sign-in, then: JWT the redirect with the id_token; OAUTH the redirect target (or, for a LOGIN link
   * with none, a "signed in" page); SAML the form posting an unsolicited Response, or for a LOGIN link
   * of a held AuthnRequest the redirect to where it is answered.
   */
  complete(live: LiveLink, amr: AuthMethod[], browser: BrowserInfo): Promise<Completion>;
  /**
   * The hosted sign-in's mail: a LOGIN link (15 minutes, the landing's rules) and `code` in one
   * message, the row and the mail in one transaction, counted under the same per-user cap as generate.
   * @returns the link's id, or undefined when the cap refused it.
   */
  issueLoginLink(customerId: number, input: LoginLinkInput): Promise<number | undefined>;
  /** Uses up a LOGIN link by its id (its code was typed): true for the one caller, on any node, that did. */
  consumeLoginLink(customerId: number, linkId: number): Promise<boolean>;
}

export interface LoginLinkInput {
  user: Pick<User, 'id' | 'username' | 'email' | 'firstName' | 'lastName'>;
  application: Pick<Application, 'id' | 'name'>;
  /** Where the landing sends the user (JWT: the flow's redirect_uri; OAUTH: the first login URL, or null). */
  redirectUri: string | null;
  /** The 6-digit code the mail carries. */
  code: string;
}

/** Length in characters (code points), as a person counts them. */
const length = (text: string) => [...text].length;

export function checkUsername(username: string): void {
  const n = length(username);
  if (n < USERNAME_MIN || n > USERNAME_MAX) throw new Invalid('username', `must be ${USERNAME_MIN} to ${USERNAME_MAX} characters`);
}

export function createMagicLinksService(deps: MagicLinksDeps): MagicLinksService {
  const { db, clock, users, applications, policies, mfa, outbox, passkeys } = deps;

  /** The link with its user, application and policy when it can be used at `now`. */
  async function live(link: MagicLink | undefined, now: number): Promise<LiveLink | undefined> {
    if (!link || link.consumedAt !== null || link.revokedAt !== null || link.expiresAt <= now) return undefined;
    const user = await users.findByIdWithGroups(link.customerId, link.userId);
    if (!user || user.isDisabled || user.markForDeletion) return undefined;
    const application = await applications.findByUuid(db, link.customerId, link.applicationUuid);
    if (!application) return undefined;
    // The policy is read again at use: an admin who removed it has taken the way in away.
    const policy = await policies.findPolicyForUser(db, link.customerId, application.id, user.groups);
    if (!policy || policy.firstFactor !== 'MAGIC_LINK') return undefined;
    return { link, user, application, secondFactor: policy.secondFactor, redirectOrigins: redirectOrigins(application, link.redirectUri) };
  }

  const byToken = (token: string) => (TOKEN.test(token) ? repo.findLinkByTokenHash(db, sha256Hex(token)) : Promise.resolve(undefined));

  /** The second-factor ways the policy accepts that the user has (the policy's name as a string: PASSKEY and ANY included). */
  async function waysOf(customerId: number, userId: number, secondFactor: string): Promise<SecondFactorWays> {
    const code = (secondFactor === 'AUTHENTICATOR_APP' || secondFactor === 'ANY') && await mfa.hasActiveAuthenticator(customerId, userId);
    const passkey = (secondFactor === 'PASSKEY' || secondFactor === 'ANY') && await passkeys.count({ customerId, userId }) > 0;
    return { code, passkey };
  }

  /** The refusal of a link whose policy asks for a second factor the user does not have. */
  async function missingSecondFactor(found: LiveLink): Promise<Refusal | undefined> {
    const second: string = found.secondFactor;
    if (second === 'NONE') return undefined;
    const ways = await waysOf(found.link.customerId, found.user.id, second);
    if (ways.code || ways.passkey) return undefined;
    return { noAuthenticator: found.application.name, missing: second as 'AUTHENTICATOR_APP' | 'PASSKEY' | 'ANY' };
  }

  /**
   * One attempt of a pending login's second factor (`check` says why the answer is wrong, or nothing
   * when it is right): the attempt is reserved before checking, so concurrent guesses share the budget
   * whatever they guess with (authenticator or recovery codes).
   */
  async function checkPending(pendingId: string, context: AuditContext, check: (link: MagicLink, user: User, ways: SecondFactorWays) => Promise<'wrong_code' | 'replayed' | 'otp_required' | 'wrong_passkey' | undefined>): Promise<SecondFactorResult> {
    if (!TOKEN.test(pendingId)) return { ok: false, reason: 'ended' };
    const idHash = sha256Hex(pendingId);
    const reserved = await repo.reservePendingAttempt(db, idHash, PENDING_MAX_ATTEMPTS, clock.now());
    if (!reserved) return { ok: false, reason: 'ended' };
    const link = await repo.findLinkById(db, reserved.customerId, reserved.linkId);
    const user = link && await users.findByIdWithGroups(link.customerId, link.userId);
    const application = link && await applications.findByUuid(db, link.customerId, link.applicationUuid);
    const policy = user && application && await policies.findPolicyForUser(db, link.customerId, application.id, user.groups);
    const ways = user && policy && await waysOf(link.customerId, user.id, policy.secondFactor);
    if (!link || !user || user.isDisabled || !application || !policy || policy.firstFactor !== 'MAGIC_LINK' || !ways || !(ways.code || ways.passkey)) {
      await repo.deletePendingLogin(db, idHash);
      return { ok: false, reason: 'ended' };
    }
    const reason = await check(link, user, ways);
    if (reason) {
      await deps.signInEvents.record(link.customerId, 'signin.failed', user, context);
      const attemptsLeft = PENDING_MAX_ATTEMPTS - reserved.attempt;
      if (attemptsLeft <= 0) {
        await repo.deletePendingLogin(db, idHash);
        return { ok: false, reason: 'ended' };
      }
      return { ok: false, reason, attemptsLeft, applicationName: application.name, redirectOrigins: redirectOrigins(application, link.redirectUri) };
    }
    // One finish per pending login, even if two right codes raced.
    if (!await repo.deletePendingLogin(db, idHash)) return { ok: false, reason: 'ended' };
    return {
      ok: true,
      live: { link, user, application, secondFactor: policy.secondFactor, redirectOrigins: redirectOrigins(application, link.redirectUri) },
    };
  }

  return {
    async generate(customerId, input, correlationId, requestContext) {
      checkUsername(input.username);
      if (input.redirectUri !== undefined) {
        const problem = urlProblem(input.redirectUri);
        if (problem) throw new Invalid('redirectUri', problem);
      }
      const minutes = input.expiryMinutes ?? EXPIRY_DEFAULT;
      if (!Number.isSafeInteger(minutes) || minutes < EXPIRY_MIN || minutes > EXPIRY_MAX) {
        throw new Invalid('expiryMinutes', `must be an integer from ${EXPIRY_MIN} to ${EXPIRY_MAX}`);
      }
      const user = await users.findByLogin(customerId, input.username);
      if (!user) throw new UserNotFound();
      const application = await applications.getByUuid(db, customerId, input.applicationUuid);
      const redirectUri = chooseRedirect(application, input.redirectUri);
      // The user's groups are read only when the application has a group's policy.
      const policy = await policies.findPolicyForUser(db, customerId, application.id, async () => (await users.findByIdWithGroups(customerId, user.id))?.groups ?? []);
      if (!policy) {
        throw new Invalid('policy', 'is missing: no login policy of this application applies to the user; create one with firstFactor MAGIC_LINK');
      }
      if (policy.firstFactor !== 'MAGIC_LINK') {
        throw new Invalid('policy', `${policy.id} applies to this user and application and its firstFactor is ${policy.firstFactor}, not MAGIC_LINK`);
      }

      const capKey = `magic-generate:${customerId}:${user.id}`;
      // The event names the request's correlationId, which the answer and the link's row carry too.
      const context: AuditContext = { ...requestContext, correlationId };
      // The place under the cap is reserved for the write of the link and its mail: in the database
      // it is a statement of that transaction (it commits with them or not at all); in Redis it is
      // given back when the transaction fails. Two generates racing for one user and application:
      // the unique index on open invites makes one of them fail; it runs again and replaces the other's link.
      for (let attempt = 1; ; attempt++) {
        const token = randomBytes(32).toString('base64url');
        const now = clock.now();
        let outcome;
        try {
          outcome = await reserveForWrite(deps.throttles, db, { key: capKey, limit: GENERATE_CAP }, now, now - GENERATE_CAP_WINDOW_MS, async (trx) => {
            await repo.revokeOpenInvite(trx, customerId, user.id, application.id, now);
            await repo.insertLink(trx, customerId, {
              userId: user.id, applicationId: application.id, tokenHash: sha256Hex(token), redirectUri,
              expiresAt: now + minutes * 60_000, now, correlationId,
            });
            await outbox.enqueue(trx, {
              customerId,
              template: 'magic-link-invite',
              to: user.email,
              params: {
                userName: `${user.firstName} ${user.lastName}`.trim() || user.username,
                applicationName: application.name,
                link: `${deps.publicUrl}/magic/${token}`,
                expiresInMinutes: minutes,
              },
            });
            await deps.audit.record(trx, customerId, { action: 'magiclink.generated', target: userTarget(user) }, context);
          });
        } catch (error) {
          if (!isUniqueViolation(error) || attempt >= 3) throw error;
          continue;
        }
        if ('refused' in outcome) {
          throw new RateLimited(Math.max(1, Math.ceil((outcome.refused.blockedUntil - now) / 1000)), 'Too many magic links for this user: try again later.');
        }
        break;
      }
      deps.mailEnqueued?.();
    },

    listRecent: (customerId, userId, limit) => repo.listRecentLinks(db, customerId, userId, limit),

    async revoke(customerId, username, context) {
      checkUsername(username);
      // An unknown user has no active link either: the same answer, so revoke tells nobody who exists.
      const user = await users.findByLogin(customerId, username);
      if (!user) throw new NotFound('invite link', NO_INVITE_MESSAGE);
      return db.transaction().execute(async (trx) => {
        const revoked = await repo.revokeActiveInvites(trx, customerId, user.id, clock.now());
        if (revoked === 0) throw new NotFound('invite link', NO_INVITE_MESSAGE);
        await deps.audit.record(trx, customerId, { action: 'magiclink.revoked', target: userTarget(user) }, context);
        return revoked;
      });
    },

    async inspect(token) {
      const found = await live(await byToken(token), clock.now());
      if (!found) return 'dead';
      return await missingSecondFactor(found) ?? found;
    },

    async consume(token, context) {
      const found = await live(await byToken(token), clock.now());
      if (!found) return 'dead';
      // Checked before using the link: the user can come back once the second factor is there.
      const missing = await missingSecondFactor(found);
      if (missing) return missing;
      const consumed = await db.transaction().execute(async (trx) => {
        if (!await repo.consumeLink(trx, found.link.id, clock.now())) return false;
        // The link is the user's (mailed to them): its use is theirs in the audit log.
        await deps.audit.record(trx, found.link.customerId, { action: 'magiclink.used', target: userTarget(found.user) }, actingUser(context, found.user));
        return true;
      });
      return consumed ? found : 'dead';
    },

    async startSecondFactor(found) {
      const id = randomBytes(32).toString('base64url');
      const now = clock.now();
      await repo.deleteExpiredPendingLogins(db, now);
      await repo.insertPendingLogin(db, found.link.customerId, { idHash: sha256Hex(id), linkId: found.link.id, expiresAt: now + PENDING_LOGIN_MS });
      return id;
    },

    checkSecondFactor: (pendingId, code, context) => checkPending(pendingId, context, async (link, user, ways) => {
      if (!ways.code) return 'wrong_code';
      try {
        await mfa.checkLoginOtp(link.customerId, user.id, code);
        return undefined;
      } catch (error) {
        const reason = (error as { reason?: string }).reason;
        if (reason !== 'wrong_code' && reason !== 'replayed' && reason !== 'otp_required') throw error;
        return reason;
      }
    }),

    async pendingStep(pendingId) {
      if (!TOKEN.test(pendingId)) return undefined;
      const pending = await repo.findPendingLogin(db, sha256Hex(pendingId), PENDING_MAX_ATTEMPTS, clock.now());
      const link = pending && await repo.findLinkById(db, pending.customerId, pending.linkId);
      const application = link && await applications.findByUuid(db, link.customerId, link.applicationUuid);
      const user = application && await users.findByIdWithGroups(link.customerId, link.userId);
      const policy = user && await policies.findPolicyForUser(db, link.customerId, application.id, user.groups);
      if (!policy) return undefined;
      const ways = await waysOf(link.customerId, link.userId, policy.secondFactor);
      return { applicationName: application.name, redirectOrigins: redirectOrigins(application, link.redirectUri), ways };
    },

    async passkeyOptions(pendingId) {
      if (!TOKEN.test(pendingId)) return undefined;
      const pending = await repo.findPendingLogin(db, sha256Hex(pendingId), PENDING_MAX_ATTEMPTS, clock.now());
      if (!pending) return undefined;
      const step = await this.pendingStep(pendingId);
      const link = await repo.findLinkById(db, pending.customerId, pending.linkId);
      if (!step?.ways.passkey || !link) return undefined;
      return passkeys.authenticationOptions(link.customerId, { customerId: link.customerId, userId: link.userId });
    },

    checkPasskey: (pendingId, ceremonyId, response, context) => checkPending(pendingId, context, async (link, user, ways) => {
      if (!ways.passkey) return 'wrong_passkey';
      try {
        const { holder } = await passkeys.authenticate(link.customerId, ceremonyId, response);
        return holder.customerId === link.customerId && holder.userId === user.id ? undefined : 'wrong_passkey';
      } catch (error) {
        if (error instanceof Invalid) return 'wrong_passkey';
        throw error;
      }
    }),

    acceptsRecoveryCodes: deps.recoveryCodes !== undefined,

    checkRecoveryCode: (pendingId, code, context) => checkPending(pendingId, context, async (link, user) => {
      if (!deps.recoveryCodes) return 'wrong_code';
      return await deps.recoveryCodes.use(link.customerId, user.id, code) ? undefined : 'wrong_code';
    }),

    async issueLoginLink(customerId, input) {
      const { user, application } = input;
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      let linkId = 0;
      const outcome = await reserveForWrite(deps.throttles, db, { key: `magic-generate:${customerId}:${user.id}`, limit: GENERATE_CAP }, now, now - GENERATE_CAP_WINDOW_MS, async (trx) => {
        linkId = await repo.insertLink(trx, customerId, {
          userId: user.id, applicationId: application.id, tokenHash: sha256Hex(token), redirectUri: input.redirectUri,
          expiresAt: now + LOGIN_LINK_MINUTES * 60_000, now, correlationId: 'sign-in', type: LOGIN_LINK_TYPE,
        });
        await outbox.enqueue(trx, {
          customerId,
          template: 'magic-link-login',
          to: user.email,
          params: {
            userName: `${user.firstName} ${user.lastName}`.trim() || user.username,
            applicationName: application.name,
            link: `${deps.publicUrl}/magic/${token}`,
            code: input.code,
            expiresInMinutes: LOGIN_LINK_MINUTES,
          },
        });
      });
      if ('refused' in outcome) return undefined;
      deps.mailEnqueued?.();
      return linkId;
    },

    consumeLoginLink: (_customerId, linkId) => repo.consumeLink(db, linkId, clock.now()),

    async complete(found, amr, browser) {
      const { link, user, application } = found;
      // Every completed link signs the browser in to the customer's identity provider: the user's other
      // applications then sign in without asking again, under their own policies. The landing is not under
      // the issuer's path, so the browser does not show it the current session's cookie: the new session
      // replaces it in this browser (the old row ends by its limits).
      const opened = await deps.ssoSessions.open(link.customerId, user.id, amr, browser);
      const ssoCookie = deps.ssoSessions.cookie(new URL(deps.issuer(link.customerKey)).pathname, opened.value, opened.session);
      await users.recordSignIn(link.customerId, user.id);
      switch (application.type) {
        case 'JWT': {
          const idToken = await deps.signJwt(link.customerId, idTokenClaims(deps.issuer(link.customerKey), application.uuid, user, amr),
            { ttlSeconds: ID_TOKEN_TTL_SECONDS });
          return { kind: 'redirect', location: withQueryParameter(link.redirectUri!, 'id_token', idToken), redirectOrigins: found.redirectOrigins, ssoCookie };
        }
        case 'OAUTH':
          if (link.redirectUri === null) return { kind: 'signed-in', applicationName: application.name, redirectOrigins: [], ssoCookie };
          return { kind: 'redirect', location: link.redirectUri, redirectOrigins: found.redirectOrigins, ssoCookie };
        case 'SAML': {
          if (link.redirectUri !== null) return { kind: 'redirect', location: link.redirectUri, redirectOrigins: found.redirectOrigins, ssoCookie };
          const answer = unsolicitedAnswer(application);
          const withGroups = await users.findByIdWithGroups(link.customerId, user.id);
          if (!answer || !withGroups) throw new Error(`SAML application ${application.uuid} has no service provider, or user ${user.id} is gone`);
          const form = await deps.saml.respond(link.customerId, deps.issuer(link.customerKey), application, { session: opened.session, user: withGroups }, answer);
          return { kind: 'saml', form, redirectOrigins: [new URL(answer.acsUrl).origin], ssoCookie };
        }
      }
    },
  };
}

