/**
 * Refuses a signed header triple used again after a short grace. The digest signs neither method,
 * path nor body, so a captured triple would otherwise work against any admin route for the whole
 * timestamp window. Real clients send two calls in the same millisecond, hence the grace.
 * The seen-set must be shared by every node (a triple replayed on another node is a replay too): in
 * the database by default (createDatabaseReplayGuard), in Redis when LATCHKEY_REDIS_URL is set
 * (createRedisReplayGuard). createReplayGuard keeps it in one process's memory (tests, tools).
 */
import { sql, type Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Clock } from '../lib/clock.ts';
import type { Database } from '../store/schema.ts';

export interface ReplayGuard {
  /**
   * Records a verified digest (call it only after the signature checked out).
   * @returns false when `digest` was first seen more than the grace ago (on any node sharing the
   * guard), or when a memory guard is full of live entries (it fails closed rather than grow).
   * @throws when the shared store cannot be reached: the request fails, it is never admitted unchecked.
   */
  admit(digest: string, timestampMs: number): boolean | Promise<boolean>;
}

export interface MemoryReplayGuard extends ReplayGuard {
  admit(digest: string, timestampMs: number): boolean;
  /** Drops the entries whose timestamps have left the window (admit does so too, at most every 5 s). */
  sweep(): void;
  size(): number;
}

/** A guard whose expired rows are deleted by a periodic job (run once per cluster, see compose.ts). */
export interface SharedReplayGuard extends ReplayGuard {
  admit(digest: string, timestampMs: number): Promise<boolean>;
  /** Deletes the triples whose timestamps have left the window; returns how many (Redis expires its own: 0). */
  purgeExpired(): Promise<number>;
}

interface GuardOptions { clock: Clock; graceMs: number; windowMs: number }

/** 128 bits of a SHA-512 digest only computable with the customer's API key identify the triple as well as 512. */
const prefixOf = (digest: string): string => digest.slice(0, 32);

/**
 * One statement per event-loop turn, not per request: the digests admitted in one turn are written
 * together, each inserted if new or, on conflict, a no-op update that returns its first use's time (the
 * row lock makes concurrent first uses on two nodes agree). Under load the requests of a turn share one
 * round trip; alone, a request waits for nothing but its own statement. Expired rows are deleted in
 * batches by purgeExpired, never on the request path.
 */
export function createDatabaseReplayGuard(opts: GuardOptions & { db: Kysely<Database>; purgeBatch?: number }): SharedReplayGuard {
  const batch = opts.purgeBatch ?? 10_000;
  interface Pending { expiresAt: number; waiters: { resolve(firstSeen: number): void; reject(error: unknown): void }[] }
  let pending: Map<string, Pending> | undefined;

  async function flush(digests: Map<string, Pending>): Promise<void> {
    const now = opts.clock.now();
    try {
      // One row per digest: a statement may not upsert one row twice.
      const rows = await opts.db.insertInto('admin_replay_guard')
        .values([...digests].map(([prefix, p]) => ({ digest_prefix: prefix, first_seen: now, expires_at: p.expiresAt })))
        .onConflict((oc) => oc.column('digest_prefix').doUpdateSet({ first_seen: sql.ref('admin_replay_guard.first_seen') }))
        .returning(['digest_prefix', 'first_seen'])
        .execute();
      const firstSeen = new Map(rows.map((row) => [row.digest_prefix, Number(row.first_seen)]));
      for (const [prefix, p] of digests) {
        const seen = firstSeen.get(prefix);
        for (const waiter of p.waiters) {
          if (seen === undefined) waiter.reject(new Error('the replay guard returned no row'));
          else waiter.resolve(seen);
        }
      }
    } catch (error) {
      for (const p of digests.values()) for (const waiter of p.waiters) waiter.reject(error);
    }
  }

  return {
    async admit(digest, timestampMs) {
      const prefix = prefixOf(digest);
      const expiresAt = timestampMs + opts.windowMs;
      if (!pending) {
        const turn = new Map<string, Pending>();
        pending = turn;
        // After the other requests already read in this turn have had their say.
        setImmediate(() => {
          pending = undefined;
          void flush(turn);
        });
      }
      const firstSeen = await new Promise<number>((resolve, reject) => {
        const entry = pending!.get(prefix);
        if (entry) {
          entry.expiresAt = Math.max(entry.expiresAt, expiresAt);
          entry.waiters.push({ resolve, reject });
        } else {
          pending!.set(prefix, { expiresAt, waiters: [{ resolve, reject }] });
        }
      });
      return opts.clock.now() - firstSeen <= opts.graceMs;
    },
    async purgeExpired() {
      const now = opts.clock.now();
      let total = 0;
      // Small batches: a long window of a busy cluster must not become one long delete.
      for (;;) {
        const doomed = opts.db.selectFrom('admin_replay_guard').select('digest_prefix').where('expires_at', '<', now).limit(batch);
        const result = await opts.db.deleteFrom('admin_replay_guard').where('digest_prefix', 'in', doomed).executeTakeFirst();
        const deleted = Number(result.numDeletedRows);
        total += deleted;
        if (deleted < batch) return total;
      }
    },
  };
}

/**
 * SET key first-use NX GET PX ttl (Redis 7): one round trip that both records a new triple and
 * returns the first use's time of a known one; Redis expires the key when the timestamp leaves the window.
 */
export function createRedisReplayGuard(opts: GuardOptions & { redis: Redis; prefix?: string }): SharedReplayGuard {
  const prefix = opts.prefix ?? 'latchkey:replay:';
  return {
    async admit(digest, timestampMs) {
      const now = opts.clock.now();
      const ttl = Math.max(1, timestampMs + opts.windowMs - now);
      const previous = await opts.redis.call('SET', prefix + prefixOf(digest), String(now), 'NX', 'GET', 'PX', String(ttl)) as string | null;
      return previous === null || now - Number(previous) <= opts.graceMs;
    },
    purgeExpired: async () => 0,
  };
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

export function createReplayGuard(opts: GuardOptions & { maxEntries?: number }): MemoryReplayGuard {
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
