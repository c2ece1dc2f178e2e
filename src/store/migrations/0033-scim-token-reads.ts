import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';

/**
 * Each node keeps the SCIM tokens it has looked up in memory (scim/tokens/service.ts), so on
 * PostgreSQL writes to `scim_tokens` notify the change feed like those of migrations 0008, 0017 and
 * 0032: a token deleted on one node stops working on every other (SQLite needs nothing: data_version
 * covers every table).
 */
export function scimTokenReadsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create trigger latchkey_notify_change after insert or update or delete or truncate on scim_tokens
        for each statement execute function latchkey_notify_change()`.execute(db);
    },
  };
}
