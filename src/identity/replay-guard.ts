/**
 * Refuses a signed header triple used again after a short grace. The digest signs neither method,
 * path nor body, so a captured triple would otherwise work against any admin route for the whole
 * timestamp window. Real clients send two calls in the same millisecond, hence the grace.
 * In memory on one node; entries live only until their timestamp leaves the accepted window.
 */
import type { Clock } from '../lib/clock.ts';

export interface ReplayGuard {
  /** @returns false when `digest` was first seen more than the grace ago. */
  admit(digest: string, timestampMs: number): boolean;
  size(): number;
}

export function createReplayGuard(opts: { clock: Clock; graceMs: number; windowMs: number; maxEntries?: number }): ReplayGuard {
  const firstSeen = new Map<string, { at: number; forgetAt: number }>();
  const maxEntries = opts.maxEntries ?? 1_000_000;
  let nextSweepAt = 0;

  const sweep = (now: number) => {
    for (const [digest, entry] of firstSeen) if (entry.forgetAt < now) firstSeen.delete(digest);
    nextSweepAt = now + 5_000;
  };

  return {
    admit(digest, timestampMs) {
      const now = opts.clock.now();
      if (now >= nextSweepAt || firstSeen.size >= maxEntries) sweep(now);
      const seen = firstSeen.get(digest);
      if (seen) return now - seen.at <= opts.graceMs;
      // Fail closed when flooded: an unbounded map is a memory exhaustion attack.
      if (firstSeen.size >= maxEntries) return false;
      firstSeen.set(digest, { at: now, forgetAt: timestampMs + opts.windowMs });
      return true;
    },
    size: () => firstSeen.size,
  };
}
