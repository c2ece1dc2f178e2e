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

/** Writes the setting unless it exists; returns the stored value (this one, or the one there first). */
export async function insertSettingIfAbsent(db: Executor, name: string, value: string, now: number): Promise<string> {
  await db.insertInto('site_settings').values({ name, value, updated_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('site_settings').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

export async function readSetting(db: Executor, name: string): Promise<string | undefined> {
  const row = await db.selectFrom('site_settings').select('value').where('name', '=', name).executeTakeFirst();
  return row?.value;
}

export async function deleteSettings(db: Executor, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await db.deleteFrom('site_settings').where('name', 'in', [...names]).execute();
}
