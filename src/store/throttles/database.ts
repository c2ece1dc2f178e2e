/**
 * The attempt counters in the database (the default): one row per throttled key in
 * site_login_failures, shared by every node through the database. Each reservation is one atomic
 * INSERT … ON CONFLICT DO UPDATE … RETURNING; old rows are deleted by purgeOld now and then.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Executor } from '../db.ts';
import type { Database } from '../schema.ts';
import { delaySteps, type Limit, type Reserved, type ThrottleStore } from './types.ts';

/**
 * The delay after attempt `count` as one SQL expression (a CASE over the few doubling steps up to the
 * cap), so that the reserving statement sets the block itself and no other attempt slips in between.
 */
function delaySql(count: RawBuilder<number>, limit: Limit): RawBuilder<number> {
  const steps = delaySteps(limit);
  const branches = steps.map((delay, i) => sql`when ${count} = ${sql.lit(limit.budget + i)} then ${sql.lit(delay)}`);
  const cap = steps.at(-1) ?? 0;
  return sql<number>`case when ${count} < ${sql.lit(limit.budget)} then 0 ${sql.join(branches, sql` `)} else ${sql.lit(cap)} end`;
}

/**
 * Reserves one attempt on `key` in one statement: unless the key is blocked at `now`, its count goes
 * up by one (back to 1 when the last attempt is older than `windowStart`) and, from the budget on,
 * the key is blocked for that attempt's delay at once, so concurrent attempts on any node are refused
 * until this one is settled. @returns the reservation, or undefined when the key is blocked.
 */
export async function reserve(db: Executor, key: string, limit: Limit, now: number, windowStart: number): Promise<Reserved | undefined> {
  const t = 'site_login_failures';
  const count = sql<number>`case when ${sql.ref(`${t}.last_failure_at`)} < ${windowStart} then 1 else ${sql.ref(`${t}.failures`)} + 1 end`;
  const first = limit.delayMs(1);
  const row = await db.insertInto(t)
    .values({ key, failures: 1, last_failure_at: now, blocked_until: first > 0 ? now + first : 0 })
    .onConflict((oc) => oc.column('key').doUpdateSet({
      failures: count,
      last_failure_at: now,
      blocked_until: sql<number>`case when ${delaySql(count, limit)} > 0 then cast(${now} as bigint) + ${delaySql(count, limit)} else 0 end`,
    }).where(`${t}.blocked_until`, '<=', now))
    .returning(['failures', 'blocked_until'])
    .executeTakeFirst();
  return row && { count: row.failures, blockedUntil: row.blocked_until };
}

/** The key's block (0 when there is none). */
export async function findBlockedUntil(db: Executor, key: string): Promise<number> {
  const row = await db.selectFrom('site_login_failures').select('blocked_until').where('key', '=', key).executeTakeFirst();
  return row?.blocked_until ?? 0;
}

/** Gives a reservation back: one less in the count, and the block it set (if still the current one) lifted. */
export async function unreserve(db: Executor, key: string, reserved: Reserved): Promise<void> {
  await db.updateTable('site_login_failures')
    .set((eb) => ({
      failures: eb('failures', '-', 1),
      blocked_until: reserved.blockedUntil > 0
        ? eb.case().when('blocked_until', '=', reserved.blockedUntil).then(0).else(eb.ref('blocked_until')).end()
        : eb.ref('blocked_until'),
    }))
    .where('key', '=', key).where('failures', '>', 0).execute();
}

/** Blocks the key until `until`, never shortening a longer block another node set. */
export async function extendBlock(db: Executor, key: string, until: number): Promise<void> {
  await db.updateTable('site_login_failures').set({ blocked_until: until })
    .where('key', '=', key).where('blocked_until', '<', until).execute();
}

export async function clearKey(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('site_login_failures').where('key', '=', key).execute();
}

/** Forgets keys whose last attempt is older than `before` and that are not blocked any more. */
export async function purgeOld(db: Executor, before: number, now: number): Promise<void> {
  await db.deleteFrom('site_login_failures')
    .where('last_failure_at', '<', before).where('blocked_until', '<', now).execute();
}

/** Thrown inside the reserving transaction to roll back the keys already reserved. */
class Refused {
  constructor(readonly key: string, readonly blockedUntil: number) {}
}

export function createDatabaseThrottleStore(opts: { db: Kysely<Database> }): ThrottleStore {
  const { db } = opts;

  /** The keys in order; at the first blocked one, its block is read and the attempt ends. */
  async function reserveAll(exec: Executor, requests: Parameters<ThrottleStore['reserve']>[0], now: number, windowStart: number) {
    const reserved: Reserved[] = [];
    for (const { key, limit } of requests) {
      const r = await reserve(exec, key, limit, now, windowStart);
      if (!r) return { reserved, refused: new Refused(key, await findBlockedUntil(exec, key)) };
      reserved.push(r);
    }
    return { reserved, refused: undefined };
  }

  return {
    joinsTransactions: true,
    async reserve(requests, now, windowStart, exec) {
      if (exec) {
        // In the caller's transaction: a refused attempt gives back what it took there (the caller
        // may still commit its other writes).
        const { reserved, refused } = await reserveAll(exec, requests, now, windowStart);
        if (!refused) return { reserved };
        for (const [i, r] of reserved.entries()) await unreserve(exec, requests[i]!.key, r);
        return { refused: { key: refused.key, blockedUntil: refused.blockedUntil } };
      }
      // One transaction, so that an attempt refused on one key does not keep its place on another;
      // callers list the keys in one order (the address before the user's), so no lock-order deadlock.
      try {
        return await db.transaction().execute(async (trx) => {
          const { reserved, refused } = await reserveAll(trx, requests, now, windowStart);
          if (refused) throw refused;
          return { reserved };
        });
      } catch (error) {
        if (error instanceof Refused) return { refused: { key: error.key, blockedUntil: error.blockedUntil } };
        throw error;
      }
    },
    blockedUntil: (key) => findBlockedUntil(db, key),
    unreserve: (key, reserved) => unreserve(db, key, reserved),
    extendBlock: (key, until) => extendBlock(db, key, until),
    clear: (key) => clearKey(db, key),
    purgeOld: (before, now) => purgeOld(db, before, now),
  };
}
