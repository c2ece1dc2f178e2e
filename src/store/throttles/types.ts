/**
 * The attempt counters behind every throttle and lockout with a budget (token endpoint and the API-token
 * password form, console sign-in and its code step, magic-link generates per user): where they live
 * is the store's business (database.ts: the site_login_failures table; redis.ts: one hash per key when
 * LATCHKEY_REDIS_URL is set), what a reservation means is the same for both.
 */
import type { Executor } from '../db.ts';

/** What a reservation got: its place in the count, and the block it put in place (0: none). */
export interface Reserved {
  count: number;
  blockedUntil: number;
}

/** How attempts on a key are limited: the count that starts blocking, and the delay after the n-th attempt. */
export interface Limit {
  budget: number;
  delayMs(count: number): number;
}

/**
 * How long the database store keeps a key after its last attempt: the longest window of any throttle
 * (the magic-link generate cap's hour). The purge runs for every key in the table, so it must never
 * forget a count that another throttle still counts in its window.
 */
export const KEEP_KEYS_MS = 60 * 60_000;

/** One key to reserve an attempt on, under its limit. */
export interface ThrottleRequest {
  key: string;
  limit: Limit;
}

/** Every key reserved (in the order asked), or the first blocked key and its block; then none is. */
export type ReserveOutcome =
  | { reserved: Reserved[] }
  | { refused: { key: string; blockedUntil: number } };

export interface ThrottleStore {
  /**
   * True when `reserve` can be a statement of the caller's database transaction (the database
   * store); false when the counts live elsewhere (Redis), so a reservation cannot roll back with
   * a write and must be given back (`unreserve`) when the write fails. See reserveForWrite.
   */
  readonly joinsTransactions: boolean;
  /**
   * Reserves one attempt on every key, atomically (one statement per key in one transaction, or one
   * Redis script): unless a key is blocked at `now`, its count goes up by one (back to 1 when its last
   * attempt is older than `windowStart`) and, from the budget on, the key is blocked for that attempt's
   * delay by this same operation, so concurrent attempts on any node are refused until this one is
   * settled. When any key is blocked, none keeps a place.
   * @param exec the database store runs its statements there (the caller's transaction); others ignore it.
   * @throws the store's error (a Redis or database failure): the caller refuses the attempt (fails closed).
   */
  reserve(requests: readonly ThrottleRequest[], now: number, windowStart: number, exec?: Executor): Promise<ReserveOutcome>;
  /** The key's block (0 when there is none). */
  blockedUntil(key: string): Promise<number>;
  /** Gives a reservation back: one less in the count, and the block it set (if still the current one) lifted. */
  unreserve(key: string, reserved: Reserved): Promise<void>;
  /** Blocks an existing key until `until`, never shortening a longer block another node set. */
  extendBlock(key: string, until: number, now: number): Promise<void>;
  /** Forgets the key. */
  clear(key: string): Promise<void>;
  /** Forgets keys whose last attempt is older than `before` and that are not blocked at `now` (Redis expires its own). */
  purgeOld(before: number, now: number): Promise<void>;
}

/**
 * The delays of the attempts from the budget on, as long as they change: entry i is the delay after
 * attempt budget + i, the last one the cap that every later attempt gets (none: no attempt blocks).
 * Both stores compute the block inside the reserving operation from this list.
 */
export function delaySteps(limit: Limit): number[] {
  const steps: number[] = [];
  let cap = 0;
  for (let n = limit.budget; n < limit.budget + 64; n++) {
    const delay = limit.delayMs(n);
    if (delay === cap) break;
    cap = delay;
    steps.push(delay);
  }
  return steps;
}
