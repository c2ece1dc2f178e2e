/**
 * Results of reads kept in memory and served only while the change feed says that none of the
 * tables they were read from has changed since: exact on SQLite, and on PostgreSQL up to the delay
 * of another node's change notification (see changes.ts). A second bound does not trust the feed:
 * an entry is read again once it is older than maxAgeMs (1 s), so a write made elsewhere (a user
 * disabled, a key revoked) is seen within that time even while a lost feed is not yet noticed.
 * Absent results are never kept, so unknown keys cannot fill it. Requests that miss one key at
 * the same time share one read. Values are shared between requests: callers must not modify them.
 */
import type { Clock } from '../lib/clock.ts';
import type { ChangeFeed, WatchedTable } from './changes.ts';

export interface ReadCache<V> {
  /**
   * The kept value of `key` while it is still current, synchronously (a hit costs no promise);
   * otherwise reads it through `load` and keeps the result (unless undefined).
   */
  read(key: string, load: () => Promise<V | undefined>): V | Promise<V | undefined>;
}

export interface ReadCacheOptions<V> {
  /** Every table the read looks at. */
  tables: readonly WatchedTable[];
  maxEntries: number;
  /** With maxWeight: the cost of keeping a value (characters, say); the oldest loads go first. */
  weigh?: (value: V) => number;
  maxWeight?: number;
  /**
   * The oldest an entry may be, counted from the start of its read, whatever the feed says
   * (default DEFAULT_MAX_AGE_MS). Access taken away elsewhere is refused here within this time.
   */
  maxAgeMs?: number;
  /** The clock compose hands down (tests move theirs instead of sleeping). */
  clock: Clock;
}

/** Together with the time a reload takes, keeps every cached fact under the 2 s bound of issue 13. */
export const DEFAULT_MAX_AGE_MS = 1000;

/** `changes` undefined: nothing is kept (caching switched off). */
export function createReadCache<V>(changes: ChangeFeed | undefined, options: ReadCacheOptions<V>): ReadCache<V> {
  const { tables, maxEntries, weigh, maxWeight = Infinity, maxAgeMs = DEFAULT_MAX_AGE_MS, clock } = options;
  // Map iteration order is insertion order: the oldest load goes first when full. (Not least
  // recently used: moving an entry on every hit cost more than the occasional reload of a hot one.)
  const entries = new Map<string, { value: V; mark: number; weight: number; readAt: number }>();
  let totalWeight = 0;
  // Reads under way, by key: a request that finds none kept joins the one already running instead of
  // reading the same rows again (each second's reload of a busy users/getall page was otherwise run by
  // every request that came while it ran). Joined on the terms of a kept entry: nothing changed since
  // that read began, and it began no more than maxAgeMs ago.
  const loading = new Map<string, { mark: number; readAt: number; value: Promise<V | undefined> }>();

  /** A read that began at `readAt` with `mark` may still be served. */
  const current = (mark: number, readAt: number) => {
    // A negative age is a clock set back (the system clock is wall time): the age is unknown, so the
    // answer is read again rather than kept for as long as the step.
    const age = clock.now() - readAt;
    return age >= 0 && age <= maxAgeMs && changes!.unchangedSince(mark, tables);
  };

  const drop = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    totalWeight -= entry.weight;
  };

  async function loadAndKeep(key: string, load: () => Promise<V | undefined>, mark: number, readAt: number): Promise<V | undefined> {
    const value = await load();
    if (value === undefined) return value;
    const weight = weigh ? weigh(value) : 0;
    if (weight > maxWeight) return value;
    drop(key);
    entries.set(key, { value, mark, weight, readAt });
    totalWeight += weight;
    while (entries.size > maxEntries || totalWeight > maxWeight) drop(entries.keys().next().value!);
    return value;
  }

  function loadOnce(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    if (!changes) return load();
    const running = loading.get(key);
    if (running && current(running.mark, running.readAt)) return running.value;
    // Taken before reading: a change committed during the read makes the entry stale at once.
    const mark = changes.mark();
    const readAt = clock.now();
    const value = loadAndKeep(key, load, mark, readAt);
    loading.set(key, { mark, readAt, value });
    const done = () => { if (loading.get(key)?.value === value) loading.delete(key); };
    value.then(done, done);
    return value;
  }

  return {
    read(key, load) {
      const entry = entries.get(key);
      if (entry) {
        if (current(entry.mark, entry.readAt)) return entry.value;
        drop(key);
      }
      return loadOnce(key, load);
    },
  };
}
