/**
 * End users' SSO sessions, stored server-side so any node can serve any request. A session is valid
 * while it is within its idle and absolute limits and its user is still there, enabled, not marked for
 * deletion and on the credentials version they signed in with: disabling (which bumps that version)
 * or deleting the user, a password change or reset end it on every node within the users cache's bound, without a write here.
 * `endAllForUser` (the admin API's users/sessions/revoke, a reset) deletes the rows.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import type { UsersService } from '../users/service.ts';
import type { UserWithGroups } from '../users/types.ts';
import * as repo from './repo.ts';
import { DEFAULT_SESSION_LIMITS, type AuthMethod, type SessionLimits, type SsoSession } from './types.ts';

/** The cookie's name; its path is the customer's issuer, so each customer has its own. */
export const SSO_COOKIE = 'lk_sso';
// Writing last_seen_at on every request would be one write per sign-in step; a minute is fine-grained enough.
const TOUCH_EVERY_MS = 60_000;
const PURGE_EVERY_MS = 10 * 60_000;
const USER_AGENT_MAX = 200;
const VALUE = /^[A-Za-z0-9_-]{43}$/;

export interface SignedIn {
  session: SsoSession;
  user: UserWithGroups;
}

export interface BrowserInfo {
  userAgent: string | undefined;
  address: string;
}

export interface SsoSessionsService {
  readonly limits: SessionLimits;
  /**
   * Opens a session for the user with the factors just shown. When the browser's current session
   * (`currentValue`) is the same user's, its factors are kept and its absolute end too (a step-up);
   * another user's is ended. Always a new value (no fixation): set it with `cookie`.
   */
  open(customerId: number, userId: number, amr: readonly AuthMethod[], browser: BrowserInfo, currentValue?: string): Promise<{ value: string; session: SsoSession }>;
  /** The browser's live session and its user, its idle time reset; undefined when there is none. */
  current(customerId: number, value: string | undefined): Promise<SignedIn | undefined>;
  /** Sign-out of this browser (nothing when the value names no session). */
  end(customerId: number, value: string | undefined): Promise<void>;
  /** Every session of the user, on every node at their next request. */
  endAllForUser(customerId: number, user: { id: number; username: string }, context: AuditContext): Promise<void>;
  /** One session of the user (the console's Revoke). @returns whether it was open. */
  endOne(customerId: number, user: { id: number; username: string }, sessionId: number, context: AuditContext): Promise<boolean>;
  /** The user's live sessions, most recently used first. */
  listForUser(customerId: number, userId: number): Promise<SsoSession[]>;
  /** The Set-Cookie value that gives the browser `value` for the customer's issuer path. */
  cookie(issuerPath: string, value: string, session: SsoSession): string;
  /** The Set-Cookie value that removes it. */
  clearCookie(issuerPath: string): string;
}

export interface SsoSessionsDeps {
  db: Kysely<Database>;
  clock: Clock;
  users: Pick<UsersService, 'findByIdWithGroups'>;
  /** Ending sessions records user.sessions.revoked (none when there were none to end). */
  audit: AuditRecorder;
  /** Makes the cookie Secure (an https public URL). */
  secure: boolean;
  limits?: SessionLimits;
}

/** The factors of both, each once, in the order first shown. */
export function unionOfFactors(a: readonly AuthMethod[], b: readonly AuthMethod[]): AuthMethod[] {
  return [...new Set([...a, ...b])];
}

export function createSsoSessionsService(deps: SsoSessionsDeps): SsoSessionsService {
  const { db, clock, users, secure } = deps;
  const limits = deps.limits ?? DEFAULT_SESSION_LIMITS;
  let lastPurge = 0;

  /** Deletes the user's sessions (or the one of `only`) with their event: how many there were. */
  async function endSessions(customerId: number, user: { id: number; username: string }, context: AuditContext, only?: number): Promise<number> {
    return db.transaction().execute(async (trx) => {
      const ended = await repo.deleteUserSessions(trx, customerId, user.id, only);
      if (ended > 0) await deps.audit.record(trx, customerId, { action: 'user.sessions.revoked', target: userTarget(user) }, context);
      return ended;
    });
  }

  const isLive = (session: SsoSession, now: number) => session.expiresAt > now && now - session.lastSeenAt < limits.idleMs;

  async function find(customerId: number, value: string | undefined): Promise<SsoSession | undefined> {
    if (!value || !VALUE.test(value)) return undefined;
    return repo.findSession(db, customerId, sha256Hex(value));
  }

  return {
    limits,

    async open(customerId, userId, amr, browser, currentValue) {
      const now = clock.now();
      if (now - lastPurge >= PURGE_EVERY_MS) {
        lastPurge = now;
        await repo.purgeEnded(db, now, now - limits.idleMs);
      }
      const user = await users.findByIdWithGroups(customerId, userId);
      if (!user) throw new Error(`no user ${userId} of customer ${customerId}`);
      const previous = await find(customerId, currentValue);
      const stepUp = previous && previous.userId === userId && previous.credentialsVersion === user.credentialsVersion && isLive(previous, now)
        ? previous : undefined;
      if (previous) await repo.deleteSession(db, customerId, previous.id);
      const value = randomBytes(32).toString('base64url');
      const session = await repo.insertSession(db, sha256Hex(value), {
        customerId,
        userId,
        credentialsVersion: user.credentialsVersion,
        amr: stepUp ? unionOfFactors(stepUp.amr, amr) : unionOfFactors(amr, []),
        userAgent: (browser.userAgent ?? '').slice(0, USER_AGENT_MAX),
        address: browser.address,
        createdAt: stepUp?.createdAt ?? now,
        lastSeenAt: now,
        expiresAt: stepUp?.expiresAt ?? now + limits.maxMs,
      });
      return { value, session };
    },

    async current(customerId, value) {
      const session = await find(customerId, value);
      if (!session) return undefined;
      const now = clock.now();
      if (!isLive(session, now)) {
        await repo.deleteSession(db, customerId, session.id);
        return undefined;
      }
      // Read through the users cache: a disable, delete or new password made on another node ends
      // the session here within that cache's bound.
      const user = await users.findByIdWithGroups(customerId, session.userId);
      if (!user || user.isDisabled || user.markForDeletion || user.credentialsVersion !== session.credentialsVersion) return undefined;
      if (now - session.lastSeenAt >= TOUCH_EVERY_MS) {
        await repo.touchSession(db, session.id, now);
        session.lastSeenAt = now;
      }
      return { session, user };
    },

    async end(customerId, value) {
      const session = await find(customerId, value);
      if (session) await repo.deleteSession(db, customerId, session.id);
    },

    async endAllForUser(customerId, user, context) {
      await endSessions(customerId, user, context);
    },

    async endOne(customerId, user, sessionId, context) {
      return (await endSessions(customerId, user, context, sessionId)) === 1;
    },

    async listForUser(customerId, userId) {
      const now = clock.now();
      const user = await users.findByIdWithGroups(customerId, userId);
      if (!user || user.isDisabled || user.markForDeletion) return [];
      const listed = await repo.listUserSessions(db, customerId, userId, { now, idleBefore: now - limits.idleMs });
      return listed.filter((session) => session.credentialsVersion === user.credentialsVersion);
    },

    cookie(issuerPath, value, session) {
      const maxAge = Math.max(0, Math.floor((session.expiresAt - clock.now()) / 1000));
      return `${SSO_COOKIE}=${value}; Path=${issuerPath}/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
    },

    clearCookie(issuerPath) {
      return `${SSO_COOKIE}=; Path=${issuerPath}/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
    },
  };
}
