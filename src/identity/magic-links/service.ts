/**
 * INVITE magic links: generate (the link row and its mail in one transaction, replacing the user's
 * earlier INVITE for the application), revoke, and the landing's steps (inspect without using,
 * consume atomically, the authenticator-code step, completion per application type).
 * The token is 256 random bits; only its SHA-256 is stored, and it leaves this module only in the mail.
 */
import { randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound, RateLimited } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Outbox } from '../../mail/outbox.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import { reserveForWrite } from '../../store/throttles/reserve-for-write.ts';
import type { Limit, ThrottleStore } from '../../store/throttles/types.ts';
import { urlProblem } from '../applications/urls.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { MfaService } from '../mfa/service.ts';
import type { PoliciesService } from '../policies/service.ts';
import type { UsersService } from '../users/service.ts';
import { chooseRedirect, redirectOrigins, withQueryParameter } from './redirect.ts';
import * as repo from './repo.ts';
import {
  EXPIRY_DEFAULT, EXPIRY_MAX, EXPIRY_MIN, USERNAME_MAX, USERNAME_MIN,
  type Completion, type GenerateInput, type LiveLink, type MagicLink,
} from './types.ts';

export const NO_INVITE_MESSAGE = 'No active invite link was found for the user.';
export const ID_TOKEN_TTL_SECONDS = 300;
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
const GENERATE_CAP: Limit = { budget: GENERATE_CAP_PER_USER, delayMs: (n) => (n >= GENERATE_CAP_PER_USER ? GENERATE_CAP_WINDOW_MS : 0) };

export interface MagicLinksDeps {
  db: Kysely<Database>;
  throttles: ThrottleStore;
  clock: Clock;
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
  /** The customer's OpenID issuer (the id_token's iss). */
  issuer(customerKey: string): string;
}

/** Why the landing cannot go on: a dead link, or a policy asking for an authenticator the user lacks (the application's name). */
export type Refusal = 'dead' | { noAuthenticator: string };

export type SecondFactorResult =
  | { ok: true; live: LiveLink }
  | { ok: false; reason: 'ended' }
  | { ok: false; reason: 'wrong_code' | 'replayed' | 'otp_required'; attemptsLeft: number; applicationName: string; redirectOrigins: string[] };

export interface MagicLinksService {
  /**
   * @throws Invalid (a field, or the policy prerequisite), UserNotFound, NotFound('application').
   * Resolves once the link and its mail are committed.
   */
  generate(customerId: number, input: GenerateInput, correlationId: string): Promise<void>;
  /** @throws Invalid (username length), NotFound('invite link') when the user has no active INVITE (or does not exist). */
  revoke(customerId: number, username: string): Promise<number>;
  /** The link if it can be used now; never uses it. */
  inspect(token: string): Promise<LiveLink | Refusal>;
  /** Uses the link (exactly one of concurrent callers gets it). */
  consume(token: string): Promise<LiveLink | Refusal>;
  /** Opens the authenticator-code step of a consumed link: the raw id for the browser's cookie. */
  startSecondFactor(live: LiveLink): Promise<string>;
  /** Checks a code for the pending login; the login ends on success or after the last attempt. */
  checkSecondFactor(pendingId: string, code: string): Promise<SecondFactorResult>;
  /** JWT: the redirect with the id_token; OAUTH: the redirect target; SAML: the page. */
  complete(live: LiveLink, amr: string[]): Promise<Completion>;
}

/** Length in characters (code points), as a person counts them. */
const length = (text: string) => [...text].length;

export function checkUsername(username: string): void {
  const n = length(username);
  if (n < USERNAME_MIN || n > USERNAME_MAX) throw new Invalid('username', `must be ${USERNAME_MIN} to ${USERNAME_MAX} characters`);
}

export function createMagicLinksService(deps: MagicLinksDeps): MagicLinksService {
  const { db, clock, users, applications, policies, mfa, outbox } = deps;

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

  async function needsMissingAuthenticator(found: LiveLink): Promise<boolean> {
    return found.secondFactor === 'AUTHENTICATOR_APP' && !await mfa.hasActiveAuthenticator(found.link.customerId, found.user.id);
  }

  return {
    async generate(customerId, input, correlationId) {
      checkUsername(input.username);
      if (input.redirectUri !== undefined) {
        const problem = urlProblem(input.redirectUri);
        if (problem) throw new Invalid('redirectUri', problem);
      }
      const minutes = input.expiryMinutes ?? EXPIRY_DEFAULT;
      if (!Number.isSafeInteger(minutes) || minutes < EXPIRY_MIN || minutes > EXPIRY_MAX) {
        throw new Invalid('expiryMinutes', `must be an integer from ${EXPIRY_MIN} to ${EXPIRY_MAX}`);
      }
      const user = await users.getWithGroups(customerId, input.username);
      const application = await applications.getByUuid(db, customerId, input.applicationUuid);
      const redirectUri = chooseRedirect(application, input.redirectUri);
      const policy = await policies.findPolicyForUser(db, customerId, application.id, user.groups);
      if (!policy) {
        throw new Invalid('policy', 'is missing: no login policy of this application applies to the user; create one with firstFactor MAGIC_LINK');
      }
      if (policy.firstFactor !== 'MAGIC_LINK') {
        throw new Invalid('policy', `${policy.id} applies to this user and application and its firstFactor is ${policy.firstFactor}, not MAGIC_LINK`);
      }

      const capKey = `magic-generate:${customerId}:${user.id}`;
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

    async revoke(customerId, username) {
      checkUsername(username);
      // An unknown user has no active link either: the same answer, so revoke tells nobody who exists.
      const user = await users.findByLogin(customerId, username);
      const revoked = user ? await repo.revokeActiveInvites(db, customerId, user.id, clock.now()) : 0;
      if (revoked === 0) throw new NotFound('invite link', NO_INVITE_MESSAGE);
      return revoked;
    },

    async inspect(token) {
      const found = await live(await byToken(token), clock.now());
      if (!found) return 'dead';
      return await needsMissingAuthenticator(found) ? { noAuthenticator: found.application.name } : found;
    },

    async consume(token) {
      const found = await live(await byToken(token), clock.now());
      if (!found) return 'dead';
      // Checked before using the link: the user can come back once an authenticator is registered.
      if (await needsMissingAuthenticator(found)) return { noAuthenticator: found.application.name };
      if (!await repo.consumeLink(db, found.link.id, clock.now())) return 'dead';
      return found;
    },

    async startSecondFactor(found) {
      const id = randomBytes(32).toString('base64url');
      const now = clock.now();
      await repo.deleteExpiredPendingLogins(db, now);
      await repo.insertPendingLogin(db, found.link.customerId, { idHash: sha256Hex(id), linkId: found.link.id, expiresAt: now + PENDING_LOGIN_MS });
      return id;
    },

    async checkSecondFactor(pendingId, code) {
      if (!TOKEN.test(pendingId)) return { ok: false, reason: 'ended' };
      const idHash = sha256Hex(pendingId);
      // Reserved before the code is checked: concurrent guesses share the budget.
      const reserved = await repo.reservePendingAttempt(db, idHash, PENDING_MAX_ATTEMPTS, clock.now());
      if (!reserved) return { ok: false, reason: 'ended' };
      const link = await repo.findLinkById(db, reserved.customerId, reserved.linkId);
      const user = link && await users.findByIdWithGroups(link.customerId, link.userId);
      const application = link && await applications.findByUuid(db, link.customerId, link.applicationUuid);
      const policy = user && application && await policies.findPolicyForUser(db, link.customerId, application.id, user.groups);
      if (!link || !user || user.isDisabled || !application || !policy || policy.firstFactor !== 'MAGIC_LINK'
        || !await mfa.hasActiveAuthenticator(link.customerId, user.id)) {
        await repo.deletePendingLogin(db, idHash);
        return { ok: false, reason: 'ended' };
      }
      try {
        await mfa.checkLoginOtp(link.customerId, user.id, code);
      } catch (error) {
        const reason = (error as { reason?: string }).reason;
        if (reason !== 'wrong_code' && reason !== 'replayed' && reason !== 'otp_required') throw error;
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
    },

    async complete(found, amr) {
      const { link, user, application } = found;
      switch (application.type) {
        case 'JWT': {
          const idToken = await deps.signJwt(link.customerId, {
            iss: deps.issuer(link.customerKey),
            aud: application.uuid,
            sub: String(user.id),
            email: user.email,
            preferred_username: user.username,
            amr,
          }, { ttlSeconds: ID_TOKEN_TTL_SECONDS });
          return { kind: 'redirect', location: withQueryParameter(link.redirectUri!, 'id_token', idToken), redirectOrigins: found.redirectOrigins };
        }
        case 'OAUTH':
          return { kind: 'redirect', location: link.redirectUri!, redirectOrigins: found.redirectOrigins };
        case 'SAML':
          return { kind: 'saml', applicationName: application.name, redirectOrigins: [] };
      }
    },
  };
}

