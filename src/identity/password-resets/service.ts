/**
 * Forgotten passwords (DESIGN.md, "Forgot password?"): a request mails an enabled user a link
 * `<issuer>/reset/<token>` (256 random bits, only the SHA-256 stored, 30 minutes), capped per user like
 * magic links; the link sets a new password once (one winner among concurrent uses), under the
 * password rules, and ends every SSO session of the user. Inspecting a link never uses it.
 */
import { randomBytes } from 'node:crypto';
import { actingUser, type AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { UserNotFound } from '../../lib/errors.ts';
import { checkPasswordRule } from '../../lib/passwords.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Outbox } from '../../mail/outbox.ts';
import type { Database } from '../../store/schema.ts';
import { reserveForWrite } from '../../store/throttles/reserve-for-write.ts';
import type { ThrottleStore } from '../../store/throttles/types.ts';
import type { Customer } from '../customers/types.ts';
import { GENERATE_CAP, GENERATE_CAP_WINDOW_MS } from '../magic-links/service.ts';
import type { SsoSessionsService } from '../sso-sessions/service.ts';
import type { UsersService } from '../users/service.ts';
import type { User } from '../users/types.ts';
import * as repo from './repo.ts';
import { RESET_TTL_MS, type PasswordReset, type ResetOutcome, type ResetRequestOutcome } from './types.ts';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** Longer than any username or e-mail the users' rules allow: not worth a lookup. */
const LOGIN_MAX = 320;

export interface LiveReset {
  reset: PasswordReset;
  user: User;
}

export interface PasswordResetsService {
  /**
   * Mails a reset link to the enabled user named by `login` (username or e-mail); nothing for an
   * unknown or disabled user, or one over the cap (10 mails an hour with magic links' rule). The
   * outcome is for tests and logs only: a page must say the same whatever it is.
   */
  request(customer: Pick<Customer, 'id' | 'customerKey'>, login: string, context: AuditContext): Promise<ResetRequestOutcome>;
  /** The reset and its user when the link can be used now; never uses it. */
  inspect(customerId: number, token: string): Promise<LiveReset | undefined>;
  /**
   * Uses the link and sets the password (not to be changed at the next sign-in), then ends every SSO
   * session of the user and the user's other open links.
   * @throws Invalid('password') when the password breaks the rules (the link stays usable).
   */
  complete(customerId: number, token: string, password: string, context: AuditContext): Promise<ResetOutcome>;
}

export interface PasswordResetsDeps {
  db: Kysely<Database>;
  clock: Clock;
  throttles: ThrottleStore;
  /** A mailed reset records password.reset.requested with its row (the actor: whoever asked, the system). */
  audit: AuditRecorder;
  users: Pick<UsersService, 'findByLogin' | 'findById' | 'setPassword'>;
  ssoSessions: Pick<SsoSessionsService, 'endAllForUser'>;
  outbox: Outbox;
  /** Called after a mail is committed (the mail worker's kick). */
  mailEnqueued?: () => void;
  /** The customer's issuer URL (`{LATCHKEY_PUBLIC_URL}/customers/<key>`): links are built from it, never from request headers. */
  issuer(customerKey: string): string;
}

const canSignIn = (user: User | undefined): user is User => user !== undefined && !user.isDisabled && !user.markForDeletion;

export function createPasswordResetsService(deps: PasswordResetsDeps): PasswordResetsService {
  const { db, clock, users, outbox } = deps;

  async function live(customerId: number, token: string): Promise<LiveReset | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const reset = await repo.findReset(db, customerId, sha256Hex(token));
    if (!reset || reset.usedAt !== null || reset.expiresAt <= clock.now()) return undefined;
    const user = await users.findById(customerId, reset.userId);
    return canSignIn(user) ? { reset, user } : undefined;
  }

  return {
    async request(customer, login, context) {
      const typed = login.trim();
      if (typed === '' || typed.length > LOGIN_MAX) return 'no-user';
      const user = await users.findByLogin(customer.id, typed);
      if (!canSignIn(user)) return 'no-user';
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      // The place under the cap is reserved for the write of the reset and its mail (as magic links do).
      const outcome = await reserveForWrite(deps.throttles, db, { key: `password-reset:${customer.id}:${user.id}`, limit: GENERATE_CAP }, now, now - GENERATE_CAP_WINDOW_MS, async (trx) => {
        await repo.insertReset(trx, sha256Hex(token), { customerId: customer.id, userId: user.id, createdAt: now, expiresAt: now + RESET_TTL_MS });
        await outbox.enqueue(trx, {
          customerId: customer.id,
          template: 'password-reset',
          to: user.email,
          params: {
            userName: `${user.firstName} ${user.lastName}`.trim() || user.username,
            link: `${deps.issuer(customer.customerKey)}/reset/${token}`,
            expiresInMinutes: RESET_TTL_MS / 60_000,
          },
        });
        await deps.audit.record(trx, customer.id, { action: 'password.reset.requested', target: userTarget(user) }, context);
      });
      if ('refused' in outcome) return 'capped';
      deps.mailEnqueued?.();
      return 'mailed';
    },

    inspect: live,

    async complete(customerId, token, password, requestContext) {
      const found = await live(customerId, token);
      if (!found) return { ok: false, reason: 'dead' };
      // The link is the user's (mailed to them): the reset and the sessions it ends are theirs in the audit log.
      const context = actingUser(requestContext, found.user);
      // Before the link is used: a password the rules refuse leaves the link as it was.
      checkPasswordRule(password);
      const usedAt = clock.now();
      if (!(await repo.useReset(db, found.reset.id, usedAt))) return { ok: false, reason: 'dead' };
      try {
        await users.setPassword(customerId, found.user.id, password, { requireChange: false, action: 'password.reset' }, context);
      } catch (error) {
        // Not stored (an outage): the link is given back. A user deleted meanwhile took the link along.
        if (error instanceof UserNotFound) return { ok: false, reason: 'dead' };
        await repo.releaseReset(db, found.reset.id, usedAt).catch(() => {});
        throw error;
      }
      await repo.useOpenResets(db, customerId, found.user.id, usedAt);
      // The new password already ends the sessions (credentials version); deleting them also empties the console's list.
      await deps.ssoSessions.endAllForUser(customerId, found.user, context);
      return { ok: true, userId: found.user.id };
    },
  };
}
