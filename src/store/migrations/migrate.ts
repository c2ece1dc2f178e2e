/** Runs every migration not yet applied, in order; safe when several nodes start at once (Kysely's lock). */
import { Migrator, type Migration } from 'kysely';
import type { Store } from '../db.ts';
import { customersMigration } from './0001-customers.ts';
import { usersGroupsMigration } from './0002-users-groups.ts';

export async function migrate(store: Store): Promise<void> {
  const migrations: Record<string, Migration> = {
    '0001-customers': customersMigration(store.dialect),
    '0002-users-groups': usersGroupsMigration(store.dialect),
  };
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}
