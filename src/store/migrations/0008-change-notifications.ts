import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';

/**
 * PostgreSQL: every committed write to a table whose reads nodes cache notifies channel
 * latchkey_changes with '<schema>.<table>' (store/postgres-changes.ts listens), whoever wrote it:
 * another node, a job, a person with psql. Statement-level, so a bulk write sends one notification,
 * and PostgreSQL folds identical ones within a transaction. A new cached table needs its own trigger.
 * SQLite needs nothing: every node on one SQLite file sees other writers through data_version.
 */
export function changeNotificationsMigration(dialect: Dialect) {
  const tables = ['customers', 'users', 'groups', 'group_members', 'api_tokens', 'site_api_keys'];
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`
        create or replace function latchkey_notify_change() returns trigger language plpgsql as $$
        begin
          perform pg_notify('latchkey_changes', tg_table_schema || '.' || tg_table_name);
          return null;
        end
        $$`.execute(db);
      for (const table of tables) {
        await sql`create trigger latchkey_notify_change after insert or update or delete or truncate on ${sql.table(table)}
          for each statement execute function latchkey_notify_change()`.execute(db);
      }
    },
  };
}
