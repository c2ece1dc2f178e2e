/** Login-attempt counters, one row per throttled key, shared by every node through the database. */
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../store/db.ts';

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
 * The delay after attempt `count` as one SQL expression (a CASE over the few doubling steps up to the
 * cap), so that the reserving statement sets the block itself and no other attempt slips in between.
 */
function delaySql(count: RawBuilder<number>, limit: Limit): RawBuilder<number> {
  const branches: RawBuilder<unknown>[] = [];
  let cap = 0;
  for (let n = limit.budget; n < limit.budget + 64; n++) {
    const delay = limit.delayMs(n);
    if (delay === cap) break;
    cap = delay;
    branches.push(sql`when ${count} = ${sql.lit(n)} then ${sql.lit(delay)}`);
  }
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
