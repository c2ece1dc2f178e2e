/**
 * Refuses a signed header triple used again after a short grace. The digest signs neither method,
 * path nor body, so a captured triple would otherwise work against any admin route for the whole
 * timestamp window. Real clients send two calls in the same millisecond, hence the grace.
 * In memory on one node; entries live only until their timestamp leaves the accepted window.
 */
import type { Clock } from '../lib/clock.ts';

export interface ReplayGuard {
  /**
   * Records a verified digest (call it only after the signature checked out).
   * @returns false when `digest` was first seen more than the grace ago, or when the guard is
   * full of live entries (it fails closed rather than grow without bound).
   */
  admit(digest: string, timestampMs: number): boolean;
  /** Drops the entries whose timestamps have left the window (admit does so too, at most every 5 s). */
  sweep(): void;
  size(): number;
}

export const DEFAULT_REPLAY_MAX_ENTRIES = 500_000;
/** How often expired entries are swept; a full guard sweeps no more often either. */
const SWEEP_INTERVAL_MS = 5_000;
/**
 * A SHA-512 digest is only computable with the customer's API key, so its first 128 bits identify
 * the triple as well as all 512 do. Kept as 16 one-byte characters: a slice of the header would keep
 * the whole 128-character header string alive (V8 slices share their parent), 2.4 times the memory
 * per entry, and a busy client makes a new triple every millisecond for the whole window.
 */
const keyOf = (digest: string): string => Buffer.from(digest.slice(0, 32), 'hex').toString('latin1');

export function createReplayGuard(opts: { clock: Clock; graceMs: number; windowMs: number; maxEntries?: number }): ReplayGuard {
  // Every triple of the window, by key: the second (counted from `epoch`) in which its timestamp
  // leaves the window; it is forgotten from the next second on (up to a second late, never early).
  // A small integer is stored in the map itself; an object or a millisecond time (a boxed double)
  // per entry doubled the memory of a busy window.
  const epoch = opts.clock.now();
  const forgetAfter = new Map<string, number>();
  // The triples first seen within the grace, with that time: the only ones a repeat may still use.
  const recent = new Map<string, number>();
  const maxEntries = opts.maxEntries ?? DEFAULT_REPLAY_MAX_ENTRIES;
  let nextSweepAt = 0;

  // Throttled even when full: sweeping a full map on every request would let a flood buy a
  // linear scan per request.
  const sweep = (now: number) => {
    const second = Math.floor((now - epoch) / 1000);
    for (const [key, last] of forgetAfter) if (last < second) forgetAfter.delete(key);
    for (const [key, at] of recent) if (now - at > opts.graceMs) recent.delete(key);
    nextSweepAt = now + SWEEP_INTERVAL_MS;
  };

  return {
    admit(digest, timestampMs) {
      const now = opts.clock.now();
      if (now >= nextSweepAt) sweep(now);
      const key = keyOf(digest);
      const firstAt = recent.get(key);
      if (firstAt !== undefined) return now - firstAt <= opts.graceMs;
      if (forgetAfter.has(key)) return false;
      if (forgetAfter.size >= maxEntries) return false;
      // Past it the timestamp is outside the window, so the signature check refuses it anyway.
      forgetAfter.set(key, Math.floor((timestampMs + opts.windowMs - epoch) / 1000));
      recent.set(key, now);
      return true;
    },
    sweep: () => sweep(opts.clock.now()),
    size: () => forgetAfter.size,
  };
}
