/** Site settings set from the CLI: one row per setting, the value as JSON. */
import type { Executor } from '../../store/db.ts';

export async function readSettings(db: Executor): Promise<Map<string, string>> {
  const rows = await db.selectFrom('site_settings').select(['name', 'value']).execute();
  return new Map(rows.map((r) => [r.name, r.value]));
}

export async function writeSetting(db: Executor, name: string, value: string, now: number): Promise<void> {
  await db.insertInto('site_settings').values({ name, value, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value, updated_at: now }))
    .execute();
}

export async function deleteSettings(db: Executor): Promise<void> {
  await db.deleteFrom('site_settings').execute();
}
