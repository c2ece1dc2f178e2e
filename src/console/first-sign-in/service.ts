/**
 * The owner's one-time sign-in link, printed by the first start: a 256-bit token (the table keeps its
 * SHA-256 only), valid 15 minutes, used once. Using it sets the owner's console password; the link and
 * the password change commit together, so a link is never spent without the password it set.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import type { ConsoleOwnersService } from '../owners/service.ts';
import * as repo from './repo.ts';

export const FIRST_SIGN_IN_TTL_MS = 15 * 60_000;
/** Ended links stay this long so their page can say "used" or "expired" rather than "unknown". */
const KEEP_ENDED_MS = 7 * 24 * 3600_000;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** What a link is now: usable (for this customer), or why not. */
export type FirstSignInState =
  | { state: 'valid'; customerId: number }
  | { state: 'used' | 'expired' | 'unknown' };

export interface ConsoleFirstSignInService {
  /** A new link's token for the owner of `customerId` (shown once, by the caller). */
  issue(customerId: number): Promise<string>;
  check(token: string): Promise<FirstSignInState>;
  /**
   * Sets the owner's password and uses the link, in one transaction; 'valid' means this call used it.
   * The link is checked before the password is hashed, so a dead link costs no argon2 run.
   * @throws Invalid('password') when the password breaks the console password rule (the link stays usable).
   */
  use(token: string, password: string): Promise<FirstSignInState>;
}

/** The link as printed: `<public URL>/console/first-sign-in/<token>`. */
export function firstSignInUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/first-sign-in/${token}`;
}

export function createConsoleFirstSignInService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  owners: Pick<ConsoleOwnersService, 'hashNewPassword' | 'storePasswordHash'>;
  ttlMs?: number;
}): ConsoleFirstSignInService {
  const { db, clock, owners } = deps;
  const ttlMs = deps.ttlMs ?? FIRST_SIGN_IN_TTL_MS;

  async function check(token: string): Promise<FirstSignInState> {
    if (!TOKEN.test(token)) return { state: 'unknown' };
    const row = await repo.findLink(db, sha256Hex(token));
    if (!row) return { state: 'unknown' };
    if (row.usedAt !== null) return { state: 'used' };
    if (row.expiresAt <= clock.now()) return { state: 'expired' };
    return { state: 'valid', customerId: row.customerId };
  }

  return {
    async issue(customerId) {
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      await repo.purgeEnded(db, now - KEEP_ENDED_MS);
      await repo.insertLink(db, { tokenHash: sha256Hex(token), customerId, createdAt: now, expiresAt: now + ttlMs });
      return token;
    },
    check,
    async use(token, password) {
      const before = await check(token);
      if (before.state !== 'valid') return before;
      const hash = await owners.hashNewPassword(password);
      const tokenHash = sha256Hex(token);
      const customerId = await db.transaction().execute(async (trx) => {
        const consumed = await repo.consumeLink(trx, tokenHash, clock.now());
        if (consumed !== undefined) await owners.storePasswordHash(trx, consumed, hash);
        return consumed;
      });
      // Another request used it (or it expired) while the password was hashed.
      return customerId === undefined ? check(token) : { state: 'valid', customerId };
    },
  };
}
