/** Failed-login counters, one row per throttled key, shared by every node through the database. */
import type { Executor } from '../../store/db.ts';

export interface FailureRow {
  failures: number;
  blockedUntil: number;
}

/** The latest block among `keys` (0 when none is blocked). */
export async function findBlockedUntil(db: Executor, keys: string[]): Promise<number> {
  const rows = await db.selectFrom('site_login_failures').select('blocked_until').where('key', 'in', keys).execute();
  return rows.reduce((max, row) => Math.max(max, row.blocked_until), 0);
}

/**
 * Counts one failure atomically (insert or increment in one statement, so concurrent failures on
 * any node all count); a key whose last failure is older than `windowStart` starts again at 1.
 * @returns the failure count after this one.
 */
export async function addFailure(db: Executor, key: string, now: number, windowStart: number): Promise<number> {
  const row = await db.insertInto('site_login_failures')
    .values({ key, failures: 1, last_failure_at: now, blocked_until: 0 })
    .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({
      failures: eb.case()
        .when('site_login_failures.last_failure_at', '<', windowStart).then(1)
        .else(eb('site_login_failures.failures', '+', 1))
        .end(),
      last_failure_at: now,
    })))
    .returning('failures')
    .executeTakeFirstOrThrow();
  return row.failures;
}

/** Blocks the key until `until`, never shortening a longer block another node set. */
export async function extendBlock(db: Executor, key: string, until: number): Promise<void> {
  await db.updateTable('site_login_failures').set({ blocked_until: until })
    .where('key', '=', key).where('blocked_until', '<', until).execute();
}

export async function clearKey(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('site_login_failures').where('key', '=', key).execute();
}

/** Forgets keys whose last failure is older than `before` and that are not blocked any more. */
export async function purgeOld(db: Executor, before: number, now: number): Promise<void> {
  await db.deleteFrom('site_login_failures')
    .where('last_failure_at', '<', before).where('blocked_until', '<', now).execute();
}
