/**
 * Refuses a signed header triple used again after a short grace. The digest signs neither method,
 * path nor body, so a captured triple would otherwise work against any admin route for the whole
 * timestamp window. Real clients send two calls in the same millisecond, hence the grace.
 * The seen-set must be shared by every node (a triple replayed on another node is a replay too): in
 * the database by default (createDatabaseReplayGuard), in Redis when LATCHKEY_REDIS_URL is set
 * (createRedisReplayGuard). createReplayGuard keeps it in one process's memory (the SQLite store, one
 * node), where its size is bounded, and each customer's share of it too.
 */
import { sql, type Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { Clock } from '../lib/clock.ts';
import type { Database } from '../store/schema.ts';

export interface ReplayGuard {
  /**
   * Records a verified digest (call it only after the signature checked out).
   * @param customerId the customer whose API key signed it (a triple is only ever its customer's).
   * @returns false when `digest` was first seen more than the grace ago (on any node sharing the
   * guard), or when the customer holds its whole share of a memory guard (it fails closed for that
   * customer rather than grow or forget a live triple).
   * @throws when the shared store cannot be reached: the request fails, it is never admitted unchecked.
   */
  admit(customerId: number, digest: string, timestampMs: number): boolean | Promise<boolean>;
}

export interface MemoryReplayGuard extends ReplayGuard {
  admit(customerId: number, digest: string, timestampMs: number): boolean;
  /** Drops the entries whose timestamps have left the window (admit does so too, at most every 5 s). */
  sweep(): void;
  /** Live entries: all of them, or one customer's. */
  size(customerId?: number): number;
}

/**
 * A guard whose expired rows are deleted by a periodic job (run once per cluster, see compose/index.ts).
 * It has no entry limit, so no customer's flood refuses another's requests: its rows or keys grow
 * with the signed rate (rate x window) and the database or Redis is sized for them. It keys
 * triples by digest alone, as a digest already names its customer.
 */
export interface SharedReplayGuard extends ReplayGuard {
  admit(customerId: number, digest: string, timestampMs: number): Promise<boolean>;
  /** Deletes the triples whose timestamps have left the window; returns how many (Redis expires its own: 0). */
  purgeExpired(): Promise<number>;
}

interface GuardOptions { clock: Clock; graceMs: number; windowMs: number }

/** 128 bits of a SHA-512 digest only computable with the customer's API key identify the triple as well as 512. */
const prefixOf = (digest: string): string => digest.slice(0, 32);

/** At most this many triples are remembered per node (about 150 bytes each). */
const REMEMBERED_MAX = 50_000;

/**
 * Whether a request that asked at `askedAt` came within the grace of the triple's first use. Judged
 * at the moment of asking, not when the shared store answers: a round trip slower than the grace (a
 * busy database, a grace of 0) must not turn a first use into a replay.
 */
const withinGrace = (opts: GuardOptions, askedAt: number, firstSeen: number): boolean => askedAt - firstSeen <= opts.graceMs;

/**
 * A shared store's first use of each triple, asked once per node: a triple's first use never changes
 * once recorded (its row or key lives until the timestamp leaves the window, long after the grace), so
 * the node keeps the question while it runs, then its answer, for the grace. A busy client's further
 * calls with the same triple wait for that one round trip or get its answer at once. A triple new to
 * the node still asks the store, so a replay on another node is refused there. Forgetting early only
 * costs a round trip, so what is kept is bounded and trimmed oldest first; a failed question is not kept.
 */
function askedOncePerTriple(opts: GuardOptions, record: (prefix: string, expiresAt: number) => Promise<number>) {
  const remembered = new Map<string, { askedAt: number; firstSeen: Promise<number> }>();
  return (prefix: string, expiresAt: number): Promise<number> => {
    const now = opts.clock.now();
    // Insertion order is asking order: drop the head past the grace, stop at the first still in it.
    for (const [key, entry] of remembered) {
      if (now - entry.askedAt <= opts.graceMs) break;
      remembered.delete(key);
    }
    const known = remembered.get(prefix);
    if (known) return known.firstSeen;
    const firstSeen = record(prefix, expiresAt);
    if (remembered.size < REMEMBERED_MAX) {
      const entry = { askedAt: now, firstSeen };
      remembered.set(prefix, entry);
      firstSeen.catch(() => { if (remembered.get(prefix) === entry) remembered.delete(prefix); });
    }
    return firstSeen;
  };
}

/**
 * One statement per event-loop turn, not per request: the digests new in one turn are written
 * together, each inserted if new or, on conflict, a no-op update that returns its first use's time (the
 * row lock makes concurrent first uses on two nodes agree). Under load the requests of a turn share one
 * round trip; alone, a request waits for nothing but its own statement. Expired rows are deleted in
 * batches by purgeExpired, never on the request path. Each triple is asked once per node (askedOncePerTriple).
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

  function record(prefix: string, expiresAt: number): Promise<number> {
    if (!pending) {
      const turn = new Map<string, Pending>();
      pending = turn;
      // After the other requests already read in this turn have had their say.
      setImmediate(() => {
        pending = undefined;
        void flush(turn);
      });
    }
    return new Promise<number>((resolve, reject) => {
      const entry = pending!.get(prefix);
      if (entry) {
        entry.expiresAt = Math.max(entry.expiresAt, expiresAt);
        entry.waiters.push({ resolve, reject });
      } else {
        pending!.set(prefix, { expiresAt, waiters: [{ resolve, reject }] });
      }
    });
  }

  const firstUse = askedOncePerTriple(opts, record);
  return {
    async admit(_customerId, digest, timestampMs) {
      const askedAt = opts.clock.now();
      const firstSeen = await firstUse(prefixOf(digest), timestampMs + opts.windowMs);
      return withinGrace(opts, askedAt, firstSeen);
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
 * Each triple is asked once per node (askedOncePerTriple).
 */
export function createRedisReplayGuard(opts: GuardOptions & { redis: Redis; prefix?: string }): SharedReplayGuard {
  const prefix = opts.prefix ?? 'latchkey:replay:';
  const firstUse = askedOncePerTriple(opts, async (digestPrefix, expiresAt) => {
    const now = opts.clock.now();
    const ttl = Math.max(1, expiresAt - now);
    const previous = await opts.redis.call('SET', prefix + digestPrefix, String(now), 'NX', 'GET', 'PX', String(ttl)) as string | null;
    return previous === null ? now : Number(previous);
  });
  return {
    async admit(_customerId, digest, timestampMs) {
      const askedAt = opts.clock.now();
      const firstSeen = await firstUse(prefixOf(digest), timestampMs + opts.windowMs);
      return withinGrace(opts, askedAt, firstSeen);
    },
    purgeExpired: async () => 0,
  };
}

export const DEFAULT_REPLAY_MAX_ENTRIES = 500_000;
/**
 * A customer may add a triple while it holds fewer than REPLAY_SHARE_FACTOR times the entries still
 * free (the "dynamic threshold" of shared switch buffers, Choudhury and Hahne 1998). Alone, a
 * customer fills 4/5 of the guard and is then refused, leaving 1/5 to everyone else; k customers
 * flooding at once end up holding 4/(1 + 4k) of it each, with 1/(1 + 4k) still free. A flood thus
 * refuses the flooder: the others are refused only when they too hold 4 times what is free. No live
 * entry is ever dropped to make room; a share frees up as its triples' timestamps leave the window.
 */
export const REPLAY_SHARE_FACTOR = 4;
/** How often expired entries are swept; a full guard sweeps no more often either. */
const SWEEP_INTERVAL_MS = 5_000;
/**
 * A SHA-512 digest is only computable with the customer's API key, so its first 128 bits identify
 * the triple as well as all 512 do. Kept as 16 one-byte characters: a slice of the header would keep
 * the whole 128-character header string alive (V8 slices share their parent), 2.4 times the memory
 * per entry, and a busy client makes a new triple every millisecond for the whole window.
 */
const keyOf = (digest: string): string => Buffer.from(digest.slice(0, 32), 'hex').toString('latin1');

/** One customer's triples: its share of the guard is the size of `live`. */
interface Holder {
  /**
   * Every triple of the window, by key: the second (counted from `epoch`) in which its timestamp
   * leaves the window; it is forgotten from the next second on (up to a second late, never early).
   * A small integer is stored in the map itself; an object or a millisecond time (a boxed double)
   * per entry doubled the memory of a busy window.
   */
  live: Map<string, number>;
  /** The triples first seen within the grace, with that time: the only ones a repeat may still use. */
  recent: Map<string, number>;
  /** When onShareFull was last told about this customer. */
  reportedAt: number;
}

/** How often onShareFull hears of one customer while it stays refused. */
const SHARE_FULL_REPORT_INTERVAL_MS = 60_000;

/**
 * The seen-set in one process's memory, at most `maxEntries` live triples, kept per customer. A
 * customer over its share (see REPLAY_SHARE_FACTOR) is refused, like a full guard: its own new
 * triples fail, nobody else's, and no live entry is ever dropped to make room (that would let its
 * triple be replayed).
 */
export function createReplayGuard(opts: GuardOptions & {
  maxEntries?: number;
  /**
   * Told when a customer's new triple is refused because it holds its whole share (at most once a
   * minute per customer): the client sees only the usual 401, the operator should see why.
   */
  onShareFull?: (customerId: number, held: number, total: number) => void;
}): MemoryReplayGuard {
  const epoch = opts.clock.now();
  const holders = new Map<number, Holder>();
  const maxEntries = opts.maxEntries ?? DEFAULT_REPLAY_MAX_ENTRIES;
  let total = 0;
  let nextSweepAt = 0;
  let fullReportedAt = -Infinity;

  // Throttled even when a share is full: sweeping on every refused request would let a flood buy a
  // linear scan per request.
  const sweep = (now: number) => {
    const second = Math.floor((now - epoch) / 1000);
    for (const [customerId, holder] of holders) {
      for (const [key, last] of holder.live) if (last < second) holder.live.delete(key);
      for (const [key, at] of holder.recent) if (now - at > opts.graceMs) holder.recent.delete(key);
      if (holder.live.size === 0 && holder.recent.size === 0) holders.delete(customerId);
    }
    total = 0;
    for (const holder of holders.values()) total += holder.live.size;
    nextSweepAt = now + SWEEP_INTERVAL_MS;
  };

  return {
    admit(customerId, digest, timestampMs) {
      const now = opts.clock.now();
      if (now >= nextSweepAt) sweep(now);
      const key = keyOf(digest);
      let holder = holders.get(customerId);
      if (holder) {
        const firstAt = holder.recent.get(key);
        if (firstAt !== undefined) return now - firstAt <= opts.graceMs;
        if (holder.live.has(key)) return false;
      }
      // Over its share (or the guard full, when free is 0): refused, whoever else holds what.
      const held = holder?.live.size ?? 0;
      if (held >= REPLAY_SHARE_FACTOR * (maxEntries - total)) {
        // A customer holding nothing is refused only when the guard is full: reported once a minute for all such.
        const reportedAt = holder ? holder.reportedAt : fullReportedAt;
        if (opts.onShareFull && now - reportedAt >= SHARE_FULL_REPORT_INTERVAL_MS) {
          if (holder) holder.reportedAt = now;
          else fullReportedAt = now;
          opts.onShareFull(customerId, held, total);
        }
        return false;
      }
      if (!holder) {
        holder = { live: new Map(), recent: new Map(), reportedAt: -Infinity };
        holders.set(customerId, holder);
      }
      // Past it the timestamp is outside the window, so the signature check refuses it anyway.
      holder.live.set(key, Math.floor((timestampMs + opts.windowMs - epoch) / 1000));
      holder.recent.set(key, now);
      total++;
      return true;
    },
    sweep: () => sweep(opts.clock.now()),
    size: (customerId) => (customerId === undefined ? total : holders.get(customerId)?.live.size ?? 0),
  };
}
