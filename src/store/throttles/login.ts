/**
 * Login throttling for the token endpoint (and the password form of the API-token routes, and the
 * console's sign-in), per user and per client address, in a ThrottleStore shared by every node (the
 * database, or Redis when LATCHKEY_REDIS_URL is set). Every attempt is reserved before the password is
 * checked, in one atomic operation that counts it on both keys and, from the budget on, blocks the
 * key at once: concurrent guesses get at most the budget of checks, the rest are refused (429) without
 * one. A failure keeps its reservation (it is the recorded failure) and blocks the key for an
 * exponentially longer delay, capped so an attacker cannot lock a user out for long.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { RateLimited } from '../../lib/errors.ts';
import type { Database } from '../schema.ts';
import { createDatabaseThrottleStore } from './database.ts';
import { KEEP_KEYS_MS, type Limit, type Reserved, type ThrottleStore } from './types.ts';

export interface LoginThrottleOptions {
  /** Where the counts live (compose/index.ts picks Redis or the database); without it, the database store over `db`. */
  store?: ThrottleStore;
  db?: Kysely<Database>;
  clock: Clock;
  /** Attempts per user (failed or in flight) before the key blocks. */
  userFreeAttempts: number;
  ipFreeAttempts: number;
  maxDelaySeconds: number;
  /** Attempts older than this are forgotten; default 15 minutes. */
  windowMs?: number;
}

export interface LoginAttempt {
  /** The user's key (the customer and the user's id), or the normalised login when it names nobody. */
  userKey: string;
  /** Key of the client address. */
  ipKey: string;
}

/** A reserved attempt; settle it once with what the check found. */
export interface Reservation {
  /** Right credentials: forgets the user's failures and gives the address's reservation back. */
  succeeded(): Promise<void>;
  /** Wrong credentials: the reservation stays as the failure and the keys past their budget stay blocked. */
  failed(): Promise<void>;
  /** Nothing was decided (a code is missing, an unexpected error): both reservations are given back. */
  release(): Promise<void>;
}

export interface LoginThrottle {
  /** Reserves an attempt on both keys, or neither. @throws RateLimited while either key is blocked. */
  reserve(attempt: LoginAttempt): Promise<Reservation>;
}

const PURGE_EVERY_MS = 60_000;
const THROTTLED_MESSAGE = 'Too many failed logins: try again later.';

/**
 * The keys of a login. A login that names a user counts against that user whatever form names them
 * (username or e-mail, any case); one that names nobody counts against its normalised text, so both
 * behave alike and the throttle tells nothing about who exists. Different prefixes: no text can name
 * a user's key.
 */
export function loginAttempt(customerId: number, login: string, userId: number | undefined, clientAddress: string): LoginAttempt {
  return {
    userKey: userId === undefined ? `u:${customerId}:${login.trim().toLowerCase()}` : `uid:${customerId}:${userId}`,
    ipKey: `ip:${clientAddress}`,
  };
}

/**
 * Block after the n-th attempt: none before the budget, 1 s for the attempt that reaches it, doubling
 * for each one after, capped.
 */
export function delayMs(count: number, budget: number, maxDelaySeconds: number): number {
  if (count < budget) return 0;
  return Math.min(maxDelaySeconds, 2 ** Math.min(count - budget, 30)) * 1000;
}

export function createLoginThrottle(opts: LoginThrottleOptions): LoginThrottle {
  const { clock } = opts;
  const store = opts.store ?? (opts.db && createDatabaseThrottleStore({ db: opts.db }));
  if (!store) throw new Error('createLoginThrottle: give a store or a db');
  const windowMs = opts.windowMs ?? 15 * 60_000;
  const limit = (budget: number): Limit => ({ budget, delayMs: (n) => delayMs(n, budget, opts.maxDelaySeconds) });
  const userLimit = limit(opts.userFreeAttempts);
  const ipLimit = limit(opts.ipFreeAttempts);
  let lastPurge = 0;

  return {
    async reserve({ userKey, ipKey }) {
      const now = clock.now();
      const windowStart = now - windowMs;
      // Both keys or neither, so that an attempt refused on one key does not keep its place on the
      // other; every attempt lists the address first, then the user: no lock-order deadlock.
      const outcome = await store.reserve([{ key: ipKey, limit: ipLimit }, { key: userKey, limit: userLimit }], now, windowStart);
      if ('refused' in outcome) {
        throw new RateLimited(Math.max(1, Math.ceil((outcome.refused.blockedUntil - now) / 1000)), THROTTLED_MESSAGE);
      }
      const [ip, user] = outcome.reserved as [Reserved, Reserved];
      const reserved = { ip, user };

      let settled = false;
      const once = (work: () => Promise<void>) => async () => {
        if (settled) return;
        settled = true;
        await work();
      };
      return {
        succeeded: once(async () => {
          await store.clear(userKey);
          await store.unreserve(ipKey, reserved.ip);
        }),
        failed: once(async () => {
          const at = clock.now();
          // The block counts from the failure, as long as it would from a failure recorded after the check.
          for (const [key, r, l] of [[userKey, reserved.user, userLimit], [ipKey, reserved.ip, ipLimit]] as const) {
            const delay = l.delayMs(r.count);
            if (delay > 0) await store.extendBlock(key, at + delay, at);
          }
          // Attackers spraying usernames leave rows behind; each node sweeps old ones now and then
          // (a no-op in Redis, whose keys expire by themselves). The table holds other throttles'
          // keys too: none is forgotten inside the longest window.
          if (at - lastPurge >= PURGE_EVERY_MS) {
            lastPurge = at;
            await store.purgeOld(at - Math.max(windowMs, KEEP_KEYS_MS), at);
          }
        }),
        release: once(async () => {
          await store.unreserve(userKey, reserved.user);
          await store.unreserve(ipKey, reserved.ip);
        }),
      };
    },
  };
}

/**
 * Runs `check` under a reservation: `'succeeded'` or `'failed'` settles it so, a thrown error
 * releases it (unless `check` settled it first) and is rethrown.
 */
export async function withReservation<T>(
  reservation: Reservation,
  check: (settle: { failed(): Promise<void>; release(): Promise<void> }) => Promise<T>,
): Promise<T> {
  try {
    const result = await check(reservation);
    await reservation.succeeded();
    return result;
  } catch (error) {
    await reservation.release();
    throw error;
  }
}
