/**
 * Failed-login throttling for the token endpoint, per username and per client address, in the
 * database so it holds across nodes. After the free attempts each failure blocks the key for an
 * exponentially longer delay, capped so an attacker cannot lock a user out for long.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { RateLimited } from '../../lib/errors.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';

export interface LoginThrottleOptions {
  db: Kysely<Database>;
  clock: Clock;
  userFreeAttempts: number;
  ipFreeAttempts: number;
  maxDelaySeconds: number;
  /** Failures older than this are forgotten; default 15 minutes. */
  windowMs?: number;
}

export interface LoginAttempt {
  /** Normalised key of the username (includes the customer). */
  userKey: string;
  /** Key of the client address. */
  ipKey: string;
}

export interface LoginThrottle {
  /** @throws RateLimited while either key is blocked. */
  check(attempt: LoginAttempt): Promise<void>;
  /** Counts a failure against both keys and blocks those past their free attempts. */
  recordFailure(attempt: LoginAttempt): Promise<void>;
  /** A successful login forgets the username's failures (the address's stay). */
  recordSuccess(attempt: LoginAttempt): Promise<void>;
}

const PURGE_EVERY_MS = 60_000;

/** Delay after the n-th failure: 1 s after the first one past the free attempts, doubling, capped. */
export function delayMs(failures: number, freeAttempts: number, maxDelaySeconds: number): number {
  const over = failures - freeAttempts;
  if (over <= 0) return 0;
  return Math.min(maxDelaySeconds, 2 ** Math.min(over - 1, 30)) * 1000;
}

export function createLoginThrottle(opts: LoginThrottleOptions): LoginThrottle {
  const { db, clock } = opts;
  const windowMs = opts.windowMs ?? 15 * 60_000;
  let lastPurge = 0;

  return {
    async check({ userKey, ipKey }) {
      const now = clock.now();
      const until = await repo.findBlockedUntil(db, [userKey, ipKey]);
      if (until > now) throw new RateLimited(Math.ceil((until - now) / 1000), 'Too many failed logins: try again later.');
    },

    async recordFailure({ userKey, ipKey }) {
      const now = clock.now();
      for (const [key, free] of [[userKey, opts.userFreeAttempts], [ipKey, opts.ipFreeAttempts]] as const) {
        const failures = await repo.addFailure(db, key, now, now - windowMs);
        const delay = delayMs(failures, free, opts.maxDelaySeconds);
        if (delay > 0) await repo.extendBlock(db, key, now + delay);
      }
      // Attackers spraying usernames leave rows behind; each node sweeps old ones now and then.
      if (now - lastPurge >= PURGE_EVERY_MS) {
        lastPurge = now;
        await repo.purgeOld(db, now - windowMs, now);
      }
    },

    async recordSuccess({ userKey }) {
      await repo.clearKey(db, userKey);
    },
  };
}
