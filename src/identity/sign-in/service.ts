/**
 * The hosted sign-in: a flow ("who may sign in, to which application, then where") started by a
 * protocol (OAUTH interaction, JWT authorize, SAML next), bound to the browser that started it, and
 * moved step by step (identify, first factor, second factor or its enrolment, a required new password)
 * until the user's policy for the application is satisfied; then the SSO session is opened (or stepped
 * up) and the browser goes back to the protocol, which checks the session again and issues. A passkey
 * moves the flow through JSON calls of the page's script (passkeyOptions, passkeyVerify), not a form.
 * Nothing a page says tells whether an account exists: a login naming nobody (or a disabled user, or a
 * user no policy applies to) walks the application-wide policy's steps and fails at the end like a
 * wrong password, after the same argon2id work.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Kysely } from 'kysely';
import { actingUser, type AuditContext } from '../../audit/context.ts';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, MfaFailed } from '../../lib/errors.ts';
import { safeEqual, sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import { loginAttempt, withReservation, type LoginThrottle } from '../../store/throttles/login.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { Application } from '../applications/types.ts';
import type { MagicLinksService } from '../magic-links/service.ts';
import type { MfaService } from '../mfa/service.ts';
import type { PasskeyHolder, PasskeysService } from '../passkeys/service.ts';
import type { PoliciesService } from '../policies/service.ts';
import type { LoginPolicy } from '../policies/types.ts';
import type { BrowserInfo, SignedIn, SsoSessionsService } from '../sso-sessions/service.ts';
import type { AuthMethod } from '../sso-sessions/types.ts';
import type { UsersService } from '../users/service.ts';
import type { UserWithGroups } from '../users/types.ts';
import { isShown, requirements, satisfies, type FactorPolicy } from './factors.ts';
import type { SignInEvents } from './events.ts';
import * as repo from './repo.ts';
import { CODE_MAX_ATTEMPTS, FLOW_TTL_MS, type Flow, type Step } from './types.ts';

export const WRONG_CREDENTIALS = 'Wrong username or password.';
export const WRONG_CODE = 'The code is incorrect.';
/** Every refused passkey (unknown, another account's, a disabled user's, not verified): one message, which tells nothing. */
export const PASSKEY_REFUSED = 'The passkey was not accepted.';
const LOGIN_MAX = 320;
const ID = /^[A-Za-z0-9_-]{43}$/;
const PURGE_EVERY_MS = 10 * 60_000;

/** When no policy applies (unknown users, an application without an application-wide policy): a password step that fails. */
const FALLBACK_POLICY: FactorPolicy = { firstFactor: 'PASSWORD', secondFactor: 'NONE' };

/** The recovery codes service (identity/recovery-codes), as the second-factor step uses it. */
export interface RecoveryCodes {
  generate(customerId: number, userId: number): Promise<string[]>;
  use(customerId: number, userId: number, code: string): Promise<boolean>;
}

/** The second factors the page offers: those the policy accepts that the user has (second) or may enrol (enrol). */
export interface SecondMethods { otp: boolean; passkey: boolean }

export interface AuthenticatorEnrolment { secret: string; otpauthUri: string; qrCodeData: string }

/** What the browser is shown next. */
export type View =
  | { step: 'identify'; error?: string }
  | { step: 'password'; login: string; error?: string }
  | { step: 'magic'; error?: string }
  | { step: 'passkey'; login: string; error?: string }
  | { step: 'second'; recovery: boolean; methods: SecondMethods; error?: string }
  | { step: 'enrol'; authenticator?: AuthenticatorEnrolment; passkey: boolean; error?: string }
  | { step: 'codes'; codes: string[] }
  | { step: 'new-password'; error?: string };

export type Outcome =
  | { kind: 'page'; status: number; view: View; application: Application; returnTo: string }
  /** Signed in: set `cookie` (the SSO session) and go to `location`. */
  | { kind: 'done'; location: string; cookie: string }
  /** No such flow for this browser, or it expired: start again from the application. */
  | { kind: 'ended' };

/** The answers to the page script's passkey calls. */
export type PasskeyOutcome =
  | { kind: 'options'; ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON | PublicKeyCredentialCreationOptionsJSON }
  /** The flow moved on: its page shows the next step. */
  | { kind: 'next' }
  | { kind: 'refused'; message: string }
  | Finished;

/** The end of a flow's move: signed in, or the flow is gone. */
export type Finished = Extract<Outcome, { kind: 'done' | 'ended' }>;

export interface FlowContext {
  customer: { id: number; displayName: string };
  issuerPath: string;
  /** The flow id from the URL and the browser's binding cookie. */
  flowId: string;
  browserValue: string | undefined;
  /** The browser's SSO cookie (a step-up keeps its factors). */
  ssoValue: string | undefined;
  browser: BrowserInfo;
  /**
   * The request's, for the audit log: the system acts. Past the first factor, what a step writes (a new
   * password, an enrolled factor) is the flow's user's (actingUser), as on the account page: only the
   * flow knows who it is.
   */
  audit: AuditContext;
}

/** A step's form, as posted. */
export interface StepInput {
  username?: string;
  password?: string;
  code?: string;
  otp?: string;
  recoveryCode?: string;
  secret?: string;
  newPassword?: string;
  confirmPassword?: string;
  /** The codes page's Continue. */
  proceed?: boolean;
}

export interface SignInService {
  /** The user's policy for the application (a group's, else the application-wide one). */
  policyFor(customerId: number, application: Application, user: UserWithGroups): Promise<LoginPolicy | undefined>;
  /** The browser's session and its user when it shows every factor the user's policy for the application asks for. */
  satisfyingSession(customerId: number, application: Application, ssoValue: string | undefined): Promise<SignedIn | undefined>;
  /**
   * Starts a flow for this browser; `browserValue` is its binding cookie when it has one (kept, else a
   * new one). A browser already signed in as a user with a policy here is asked only what is missing.
   */
  start(input: { customerId: number; application: Application; returnTo: string; browserValue: string | undefined; ssoValue: string | undefined }): Promise<{ flowId: string; browserValue: string }>;
  /** The current step's page (GET). `recovery`: the recovery-code form of the second-factor step. */
  show(ctx: FlowContext, options: { recovery: boolean }): Promise<Outcome>;
  /** A step's form (POST). @throws RateLimited past the login throttle. */
  submit(ctx: FlowContext, input: StepInput): Promise<Outcome>;
  /**
   * A passkey ceremony for the flow's step: username-less at step 1 and at a PASSKEY first factor (the
   * discoverable credential names the account; nothing tells whether the typed one exists), the user's
   * passkeys at the second factor, a new passkey at the enrolment.
   */
  passkeyOptions(ctx: FlowContext): Promise<PasskeyOutcome>;
  /** The browser's answer to passkeyOptions' ceremony; `name`: the enrolment's `Passkey name`. */
  passkeyVerify(ctx: FlowContext, input: { ceremonyId: string; response: unknown; name?: string }): Promise<PasskeyOutcome>;
  /** Resolves once the mails written after their pages were answered are written (shutdown). */
  idle(): Promise<void>;
  /** The customer's application (the protocols' client), or undefined. */
  findApplication(customerId: number, uuid: string): Promise<Application | undefined>;
}

export interface SignInDeps {
  db: Kysely<Database>;
  clock: Clock;
  users: Pick<UsersService, 'findByLogin' | 'findByIdWithGroups' | 'verifyCredentials' | 'setPassword' | 'recordSignIn'>;
  applications: Pick<ApplicationsService, 'findByUuid'>;
  policies: Pick<PoliciesService, 'findPolicyForUser'>;
  mfa: Pick<MfaService, 'checkLoginOtp' | 'hasActiveAuthenticator' | 'register' | 'validate'>;
  passkeys: Pick<PasskeysService, 'authenticationOptions' | 'authenticate' | 'registrationOptions' | 'register' | 'count'>;
  magicLinks: Pick<MagicLinksService, 'issueLoginLink' | 'consumeLoginLink'>;
  ssoSessions: SsoSessionsService;
  /** The site's login throttle (the same budgets and store as the token endpoint). */
  throttle: LoginThrottle;
  /** Every outcome of a factor shown (succeeded, failed, throttled) in the audit log. */
  events: SignInEvents;
  recoveryCodes?: RecoveryCodes;
  /** A mail that could not be written after its page was answered (never the code or the login). */
  onBackgroundError?: (error: unknown) => void;
}

const randomId = () => randomBytes(32).toString('base64url');
const FIRST_STEP: Record<FactorPolicy['firstFactor'], Step> = { PASSWORD: 'password', MAGIC_LINK: 'magic', PASSKEY: 'passkey' };
const holderOf = (customerId: number, user: { id: number }): PasskeyHolder => ({ customerId, userId: user.id });
const displayName = (user: UserWithGroups) => [user.firstName, user.lastName].filter(Boolean).join(' ') || user.username;
type Eligible = { user: UserWithGroups; policy: LoginPolicy };
/** The mailed code as the flow keeps it: keyed by the browser's binding value, which the table holds only hashed. */
const codeHash = (browserValue: string, code: string) => createHmac('sha256', browserValue).update(`login-code:${code}`).digest('hex');

/**
 * Where the landing sends a LOGIN link's user: a JWT flow's redirect_uri; an OAUTH application's first
 * login URL; a SAML flow's own return (the held AuthnRequest's continue URL, which answers it in the
 * browser that sent it).
 */
export function loginLinkTarget(application: Application, returnTo: string): string | null {
  if (application.type === 'SAML') return returnTo;
  if (application.type === 'JWT') {
    const target = URL.canParse(returnTo) ? new URL(returnTo).searchParams.get('redirect_uri') : null;
    return target && application.returnUrls.includes(target) ? target : null;
  }
  if (application.type === 'OAUTH') return application.loginUrls[0] ?? null;
  return null;
}

export function createSignInService(deps: SignInDeps): SignInService {
  const { db, clock, users, applications, policies, mfa, passkeys, magicLinks, ssoSessions, throttle, events } = deps;
  let lastPurge = 0;
  const running = new Set<Promise<void>>();
  function background(work: () => Promise<void>): void {
    const done: Promise<void> = work()
      .catch((error: unknown) => deps.onBackgroundError?.(error))
      .finally(() => running.delete(done));
    running.add(done);
  }

  async function policyFor(customerId: number, application: Application, user: UserWithGroups): Promise<LoginPolicy | undefined> {
    return policies.findPolicyForUser(db, customerId, application.id, user.groups);
  }

  /** A user who may sign in here: enabled, not being deleted, with a policy for the application. */
  async function eligible(customerId: number, application: Application, user: UserWithGroups | undefined) {
    if (!user || user.isDisabled || user.markForDeletion) return undefined;
    const policy = await policyFor(customerId, application, user);
    return policy && { user, policy };
  }

  /** The second factors the policy accepts that the user has enrolled. */
  async function enrolled(customerId: number, userId: number, policy: FactorPolicy): Promise<SecondMethods> {
    const accepted = requirements(policy).second ?? [];
    return {
      otp: accepted.includes('otp') && await mfa.hasActiveAuthenticator(customerId, userId),
      passkey: accepted.includes('hwk') && await passkeys.count(holderOf(customerId, { id: userId })) > 0,
    };
  }

  /** The step that asks for the first factor the flow has not shown, or undefined when none is missing. */
  async function nextStep(customerId: number, userId: number, policy: FactorPolicy, amr: readonly string[]): Promise<Step | undefined> {
    const { first, second } = requirements(policy);
    if (!isShown(amr, first)) return FIRST_STEP[policy.firstFactor];
    if (second && !isShown(amr, second)) {
      const has = await enrolled(customerId, userId, policy);
      return has.otp || has.passkey ? 'second' : 'enrol';
    }
    return undefined;
  }

  async function load(ctx: FlowContext): Promise<{ flow: Flow; application: Application } | undefined> {
    if (!ID.test(ctx.flowId) || !ctx.browserValue || !ID.test(ctx.browserValue)) return undefined;
    const flow = await repo.findFlow(db, ctx.customer.id, sha256Hex(ctx.flowId));
    if (!flow || flow.expiresAt <= clock.now()) return undefined;
    // Bound to the browser that started it: a flow URL opened elsewhere is refused.
    if (!safeEqual(flow.browserHash, sha256Hex(ctx.browserValue))) return undefined;
    const application = await applications.findByUuid(db, flow.customerId, flow.applicationUuid);
    return application && { flow, application };
  }

  const page = (status: number, view: View, application: Application, flow: Flow): Outcome =>
    ({ kind: 'page', status, view, application, returnTo: flow.returnTo });

  /** The flow's user and policy, when the flow names an eligible user (undefined for a login naming nobody). */
  async function flowUser(flow: Flow, application: Application) {
    if (flow.userId === null) return undefined;
    return eligible(flow.customerId, application, await users.findByIdWithGroups(flow.customerId, flow.userId));
  }

  /** The enrolment of what the policy accepts: an authenticator app (a new secret each time), a passkey, or either. */
  async function enrolView(ctx: FlowContext, found: Eligible, error?: string): Promise<View> {
    const accepted = requirements(found.policy).second ?? [];
    let authenticator: AuthenticatorEnrolment | undefined;
    if (accepted.includes('otp')) {
      const registration = await mfa.register(ctx.customer.id, { login: found.user.username, customerDisplayName: ctx.customer.displayName || 'Latchkey' });
      authenticator = { secret: registration.secret, otpauthUri: registration.otpauthUri, qrCodeData: registration.qrCodeData };
    }
    return { step: 'enrol', ...(authenticator ? { authenticator } : {}), passkey: accepted.includes('hwk'), ...(error ? { error } : {}) };
  }

  /** Opens (or steps up) the session with the flow's factors, ends the flow, and sends the browser back. */
  async function finish(ctx: FlowContext, flow: Flow, user: UserWithGroups, amr: AuthMethod[]): Promise<Finished> {
    const ended = await db.transaction().execute(async (trx) => {
      if (!await repo.deleteFlow(trx, flow.idHash)) return false;
      await events.record(flow.customerId, 'signin.succeeded', user, ctx.audit, trx);
      return true;
    });
    if (!ended) return { kind: 'ended' };
    const { value, session } = await ssoSessions.open(flow.customerId, user.id, amr, ctx.browser, ctx.ssoValue);
    await users.recordSignIn(flow.customerId, user.id);
    return { kind: 'done', location: flow.returnTo, cookie: ssoSessions.cookie(ctx.issuerPath, value, session) };
  }

  /**
   * After a factor was shown: the next step's page, or the end. The move is written only from the
   * step the flow was in (of two concurrent posts, one moves it; the other's page says it ended).
   */
  async function advance(ctx: FlowContext, flow: Flow, application: Application, found: Eligible, amr: AuthMethod[], requirePasswordChange = false): Promise<Outcome> {
    const moved = await moveOn(ctx, flow, found, amr, requirePasswordChange);
    return moved.kind === 'next' ? viewOf(ctx, moved.flow, application, found) : moved;
  }

  /** advance without the page: the passkey calls answer where to go, and the browser asks for the page. */
  async function moveOn(ctx: FlowContext, flow: Flow, found: Eligible, amr: AuthMethod[], requirePasswordChange = false): Promise<Finished | { kind: 'next'; flow: Flow }> {
    const step = requirePasswordChange ? 'new-password' : await nextStep(flow.customerId, found.user.id, found.policy, amr);
    // Done: the flow's deletion is the one move of concurrent posts that wins (no write before it).
    if (step === undefined) return finish(ctx, flow, found.user, amr);
    // The user too: a username-less passkey at step 1 is what names the flow's user.
    const login = flow.login ?? found.user.username;
    if (!await repo.updateFlow(db, flow.idHash, flow.step, { step, amr, userId: found.user.id, login })) return { kind: 'ended' };
    return { kind: 'next', flow: { ...flow, step, amr, userId: found.user.id, login } };
  }

  async function viewOf(ctx: FlowContext, flow: Flow, application: Application, found: Eligible | undefined, recovery = false): Promise<Outcome> {
    switch (flow.step) {
      case 'identify': return page(200, { step: 'identify' }, application, flow);
      case 'password': return page(200, { step: 'password', login: flow.login ?? found?.user.username ?? '' }, application, flow);
      case 'magic': return page(200, { step: 'magic' }, application, flow);
      case 'passkey': return page(200, { step: 'passkey', login: flow.login ?? '' }, application, flow);
      case 'second': {
        if (!found) return { kind: 'ended' };
        const methods = await enrolled(flow.customerId, found.user.id, found.policy);
        return page(200, { step: 'second', methods, recovery: recovery && deps.recoveryCodes !== undefined }, application, flow);
      }
      case 'new-password': return page(200, { step: 'new-password' }, application, flow);
      case 'enrol':
        if (!found) return { kind: 'ended' };
        return page(200, await enrolView(ctx, found), application, flow);
      case 'codes':
        // Shown once when made; coming back makes a new set (which ends the one shown before).
        if (!found || !deps.recoveryCodes) return page(200, { step: 'codes', codes: [] }, application, flow);
        return page(200, { step: 'codes', codes: await deps.recoveryCodes.generate(flow.customerId, found.user.id) }, application, flow);
    }
  }

  async function identify(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const login = (input.username ?? '').trim();
    if (login === '' || [...login].length > LOGIN_MAX) {
      return page(400, { step: 'identify', error: 'Enter your username or e-mail.' }, application, flow);
    }
    const named = await users.findByLogin(flow.customerId, login);
    const found = await eligible(flow.customerId, application, named && await users.findByIdWithGroups(flow.customerId, named.id));
    // Nobody (or nobody who may sign in here): the application-wide policy's steps, as a known user would get them.
    const policy: FactorPolicy = found?.policy ?? await policies.findPolicyForUser(db, flow.customerId, application.id, []) ?? FALLBACK_POLICY;
    const userId = found?.user.id ?? null;
    if (policy.firstFactor === 'MAGIC_LINK') {
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      const moved = await repo.updateFlow(db, flow.idHash, 'identify', { userId, login, step: 'magic', linkId: null, codeHash: codeHash(ctx.browserValue!, code) });
      if (!moved) return { kind: 'ended' };
      // The mail is written after the page is answered, so the answer takes as long whoever was named;
      // an unknown user's code was never sent (and there is no link): it can never match.
      if (found) {
        background(async () => {
          const linkId = await magicLinks.issueLoginLink(flow.customerId, {
            user: found.user, application, redirectUri: loginLinkTarget(application, flow.returnTo), code,
          });
          if (linkId !== undefined) await repo.setFlowLink(db, flow.idHash, linkId);
        });
      }
      return page(200, { step: 'magic' }, application, flow);
    }
    if (policy.firstFactor === 'PASSKEY') {
      if (!await repo.updateFlow(db, flow.idHash, 'identify', { userId, login, step: 'passkey' })) return { kind: 'ended' };
      return page(200, { step: 'passkey', login }, application, flow);
    }
    if (!await repo.updateFlow(db, flow.idHash, 'identify', { userId, login, step: 'password' })) return { kind: 'ended' };
    return page(200, { step: 'password', login }, application, flow);
  }

  /** Mails a LOGIN link and a new code; the flow keeps the link's id and the code's keyed hash. */
  async function mailCode(customerId: number, user: UserWithGroups, application: Application, returnTo: string, browserValue: string) {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    // Refused by the per-user cap: no mail, and a code that can never match (the page says the same).
    const linkId = await magicLinks.issueLoginLink(customerId, { user, application, redirectUri: loginLinkTarget(application, returnTo), code });
    return { linkId: linkId ?? null, codeHash: codeHash(browserValue, code) };
  }

  async function password(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const login = flow.login ?? '';
    const given = input.password ?? '';
    const found = await flowUser(flow, application);
    // Reserved before the hash is checked: a throttled caller costs no argon2id run (RateLimited: the 429 page).
    const reservation = await events.throttled(flow.customerId, found?.user, ctx.audit, () => throttle.reserve(loginAttempt(flow.customerId, login, found?.user.id, ctx.browser.address)));
    const verified = await withReservation(reservation, async (settle) => {
      // The same argon2id work whoever the login names (verifyCredentials checks a dummy hash for nobody).
      const user = given === '' ? undefined : await users.verifyCredentials(flow.customerId, found?.user.username ?? login, given);
      if (!user || !found || user.id !== found.user.id) {
        await settle.failed();
        return false;
      }
      return true;
    });
    if (!verified || !found) {
      await events.record(flow.customerId, 'signin.failed', found?.user, ctx.audit);
      return page(401, { step: 'password', login, error: WRONG_CREDENTIALS }, application, flow);
    }
    const amr = [...new Set<AuthMethod>([...flow.amr, 'pwd'])];
    return advance(ctx, flow, application, found, amr, found.user.passwordChangeRequired);
  }

  async function magicCode(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const attempt = await repo.reserveCodeAttempt(db, flow.idHash, CODE_MAX_ATTEMPTS);
    if (attempt === undefined) {
      await repo.deleteFlow(db, flow.idHash);
      return { kind: 'ended' };
    }
    const code = (input.code ?? '').replace(/\s/g, '');
    const matches = flow.codeHash !== null && /^[0-9]{6}$/.test(code) && safeEqual(flow.codeHash, codeHash(ctx.browserValue!, code));
    const found = matches ? await flowUser(flow, application) : undefined;
    if (!matches || !found || flow.linkId === null) {
      await events.record(flow.customerId, 'signin.failed', (found ?? await flowUser(flow, application))?.user, ctx.audit);
      const left = CODE_MAX_ATTEMPTS - attempt;
      if (left <= 0) {
        await repo.deleteFlow(db, flow.idHash);
        return { kind: 'ended' };
      }
      return page(401, { step: 'magic', error: `${WRONG_CODE} ${left === 1 ? '1 attempt' : `${left} attempts`} left.` }, application, flow);
    }
    // The link and the code are one: whichever is used first ends the other.
    if (!await magicLinks.consumeLoginLink(flow.customerId, flow.linkId)) {
      await repo.deleteFlow(db, flow.idHash);
      return { kind: 'ended' };
    }
    return advance(ctx, flow, application, found, [...new Set<AuthMethod>([...flow.amr, 'email'])]);
  }

  async function secondFactor(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const found = await flowUser(flow, application);
    if (!found) return { kind: 'ended' };
    const recovery = input.recoveryCode !== undefined;
    const accepted = requirements(found.policy).second ?? [];
    if (recovery && !deps.recoveryCodes) return viewOf(ctx, flow, application, found);
    // A code only where the policy takes the authenticator app (a PASSKEY policy's page has no code field).
    if (!recovery && !accepted.includes('otp')) return { kind: 'ended' };
    const reservation = await events.throttled(flow.customerId, found.user, ctx.audit, () => throttle.reserve(loginAttempt(flow.customerId, found.user.username, found.user.id, ctx.browser.address)));
    const ok = await withReservation(reservation, async (settle) => {
      if (recovery) {
        const code = input.recoveryCode!.replace(/[\s-]/g, '');
        if (code !== '' && await deps.recoveryCodes!.use(flow.customerId, found.user.id, code)) return true;
        await settle.failed();
        return false;
      }
      // checkLoginOtp lets anyone through who has no authenticator: the step exists only for those who have one.
      if (!await mfa.hasActiveAuthenticator(flow.customerId, found.user.id)) {
        await settle.release();
        return undefined;
      }
      try {
        await mfa.checkLoginOtp(flow.customerId, found.user.id, (input.otp ?? '').replace(/\s/g, '') || undefined);
        return true;
      } catch (error) {
        if (!(error instanceof MfaFailed)) throw error;
        // A wrong or replayed code counts like a wrong password: codes are guessable in a million tries.
        await settle.failed();
        return false;
      }
    });
    if (ok === undefined) return { kind: 'ended' };
    if (!ok) {
      await events.record(flow.customerId, 'signin.failed', found.user, ctx.audit);
      return page(401, { step: 'second', recovery, methods: await enrolled(flow.customerId, found.user.id, found.policy), error: WRONG_CODE }, application, flow);
    }
    // A recovery code stands in for the second factor the policy asks for (the passkey under PASSKEY).
    const shown: AuthMethod = recovery ? accepted[0]! : 'otp';
    return advance(ctx, flow, application, found, [...new Set<AuthMethod>([...flow.amr, shown])]);
  }

  async function enrol(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const found = await flowUser(flow, application);
    if (!found || !requirements(found.policy).second?.includes('otp')) return { kind: 'ended' };
    try {
      await mfa.validate(flow.customerId, { login: found.user.username, secret: input.secret ?? '', otp: (input.otp ?? '').replace(/\s/g, '') }, actingUser(ctx.audit, found.user));
    } catch (error) {
      if (!(error instanceof MfaFailed)) throw error;
      // A new secret to scan: the pending one may be locked after wrong codes.
      return page(400, await enrolView(ctx, found, `${WRONG_CODE} Scan this new code and try again.`), application, flow);
    }
    const amr = [...new Set<AuthMethod>([...flow.amr, 'otp'])];
    if (!deps.recoveryCodes) return advance(ctx, flow, application, found, amr);
    if (!await repo.updateFlow(db, flow.idHash, 'enrol', { step: 'codes', amr })) return { kind: 'ended' };
    const codes = await deps.recoveryCodes.generate(flow.customerId, found.user.id);
    return page(200, { step: 'codes', codes }, application, flow);
  }

  /** A passkey made at the enrolment step: it shows the factor; then the recovery codes (their page makes them). */
  async function enrolPasskey(ctx: FlowContext, flow: Flow, found: Eligible, input: { ceremonyId: string; response: unknown; name?: string }): Promise<PasskeyOutcome> {
    try {
      await passkeys.register(holderOf(flow.customerId, found.user), input.ceremonyId, input.response as RegistrationResponseJSON, input.name, ctx.browser.userAgent, actingUser(ctx.audit, found.user));
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return { kind: 'refused', message: error.field === 'name' ? 'The passkey name must be 1 to 64 characters on one line.' : PASSKEY_REFUSED };
    }
    const amr = [...new Set<AuthMethod>([...flow.amr, 'hwk'])];
    if (!deps.recoveryCodes) {
      const moved = await moveOn(ctx, flow, found, amr);
      return moved.kind === 'next' ? { kind: 'next' } : moved;
    }
    return await repo.updateFlow(db, flow.idHash, 'enrol', { step: 'codes', amr }) ? { kind: 'next' } : { kind: 'ended' };
  }

  /**
   * A passkey assertion at step 1 (it names the user), at a PASSKEY first factor or at the second factor
   * (it must be the flow's user's). The console owner's passkeys, a disabled user's, another customer's:
   * refused with the one message. No throttle: an assertion cannot be guessed, and a refusal changes nothing.
   */
  async function usePasskey(ctx: FlowContext, flow: Flow, application: Application, input: { ceremonyId: string; response: unknown }): Promise<PasskeyOutcome> {
    // Every refusal is signin.failed, as a wrong password or code is: the target is the flow's user when the
    // flow names one who may sign in here (as the password step's), else nobody; nothing of the assertion.
    const refuse = async (): Promise<PasskeyOutcome> => {
      await events.record(flow.customerId, 'signin.failed', (await flowUser(flow, application))?.user, ctx.audit);
      return { kind: 'refused', message: PASSKEY_REFUSED };
    };
    let holder: PasskeyHolder;
    try {
      ({ holder } = await passkeys.authenticate(flow.customerId, input.ceremonyId, input.response as AuthenticationResponseJSON));
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return refuse();
    }
    const named = flow.step === 'identify' ? holder.userId : flow.userId;
    if (holder.userId === null || named !== holder.userId) return refuse();
    const found = await eligible(flow.customerId, application, await users.findByIdWithGroups(flow.customerId, holder.userId));
    if (!found) return refuse();
    const moved = await moveOn(ctx, flow, found, [...new Set<AuthMethod>([...flow.amr, 'hwk'])]);
    return moved.kind === 'next' ? { kind: 'next' } : moved;
  }

  async function newPassword(ctx: FlowContext, flow: Flow, application: Application, input: StepInput): Promise<Outcome> {
    const found = await flowUser(flow, application);
    if (!found) return { kind: 'ended' };
    const given = input.newPassword ?? '';
    if (given !== (input.confirmPassword ?? '')) return page(400, { step: 'new-password', error: 'The passwords do not match.' }, application, flow);
    try {
      await users.setPassword(flow.customerId, found.user.id, given, { requireChange: false }, actingUser(ctx.audit, found.user));
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return page(400, { step: 'new-password', error: `The ${error.message}.` }, application, flow);
    }
    // The new password started new credentials: read the user again, so the session opens on them.
    const fresh = await flowUser(flow, application);
    if (!fresh) return { kind: 'ended' };
    return advance(ctx, flow, application, fresh, flow.amr);
  }

  return {
    policyFor,

    async satisfyingSession(customerId, application, ssoValue) {
      const signedIn = await ssoSessions.current(customerId, ssoValue);
      if (!signedIn) return undefined;
      const found = await eligible(customerId, application, signedIn.user);
      return found && satisfies(signedIn.session.amr, found.policy) ? signedIn : undefined;
    },

    async start({ customerId, application, returnTo, browserValue, ssoValue }) {
      const now = clock.now();
      if (now - lastPurge >= PURGE_EVERY_MS) {
        lastPurge = now;
        await repo.purgeExpiredFlows(db, now);
      }
      const binding = browserValue && ID.test(browserValue) ? browserValue : randomId();
      const flowId = randomId();
      const flow: Flow = {
        idHash: sha256Hex(flowId), customerId, applicationId: application.id, applicationUuid: application.uuid, returnTo,
        browserHash: sha256Hex(binding), userId: null, login: null, step: 'identify', amr: [], linkId: null, codeHash: null,
        codeAttempts: 0, createdAt: now, expiresAt: now + FLOW_TTL_MS,
      };
      // Step-up: the browser's session is someone's who may sign in here; only the missing factors are asked.
      const signedIn = await ssoSessions.current(customerId, ssoValue);
      const found = signedIn && await eligible(customerId, application, signedIn.user);
      if (signedIn && found) {
        const step = await nextStep(customerId, found.user.id, found.policy, signedIn.session.amr);
        if (step !== undefined) {
          Object.assign(flow, { userId: found.user.id, login: found.user.username, step, amr: [...signedIn.session.amr] });
          if (step === 'magic') Object.assign(flow, await mailCode(customerId, found.user, application, returnTo, binding));
        }
      }
      await repo.insertFlow(db, flow);
      return { flowId, browserValue: binding };
    },

    async show(ctx, { recovery }) {
      const loaded = await load(ctx);
      if (!loaded) return { kind: 'ended' };
      const found = await flowUser(loaded.flow, loaded.application);
      return viewOf(ctx, loaded.flow, loaded.application, found, recovery);
    },

    async passkeyOptions(ctx) {
      const loaded = await load(ctx);
      if (!loaded) return { kind: 'ended' };
      const { flow, application } = loaded;
      if (flow.step === 'identify' || flow.step === 'passkey') return { kind: 'options', ...await passkeys.authenticationOptions(flow.customerId) };
      if (flow.step !== 'second' && flow.step !== 'enrol') return { kind: 'ended' };
      const found = await flowUser(flow, application);
      if (!found || !requirements(found.policy).second?.includes('hwk')) return { kind: 'ended' };
      const holder = holderOf(flow.customerId, found.user);
      if (flow.step === 'second') return { kind: 'options', ...await passkeys.authenticationOptions(flow.customerId, holder) };
      return { kind: 'options', ...await passkeys.registrationOptions(holder, { username: found.user.username, displayName: displayName(found.user) }) };
    },

    async passkeyVerify(ctx, input) {
      const loaded = await load(ctx);
      if (!loaded) return { kind: 'ended' };
      const { flow, application } = loaded;
      if (flow.step === 'identify' || flow.step === 'passkey' || flow.step === 'second') return usePasskey(ctx, flow, application, input);
      if (flow.step !== 'enrol') return { kind: 'ended' };
      const found = await flowUser(flow, application);
      if (!found || !requirements(found.policy).second?.includes('hwk')) return { kind: 'ended' };
      return enrolPasskey(ctx, flow, found, input);
    },

    async submit(ctx, input) {
      const loaded = await load(ctx);
      if (!loaded) return { kind: 'ended' };
      const { flow, application } = loaded;
      switch (flow.step) {
        case 'identify': return identify(ctx, flow, application, input);
        case 'password': return password(ctx, flow, application, input);
        case 'magic': return magicCode(ctx, flow, application, input);
        case 'passkey': return viewOf(ctx, flow, application, undefined);
        case 'second': return secondFactor(ctx, flow, application, input);
        case 'enrol': return enrol(ctx, flow, application, input);
        case 'new-password': return newPassword(ctx, flow, application, input);
        case 'codes': {
          const found = await flowUser(flow, application);
          if (!found) return { kind: 'ended' };
          return finish(ctx, flow, found.user, flow.amr);
        }
      }
    },

    async idle() { await Promise.allSettled([...running]); },

    findApplication: (customerId, uuid) => applications.findByUuid(db, customerId, uuid),
  };
}
