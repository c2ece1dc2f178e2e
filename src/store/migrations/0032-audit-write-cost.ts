import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';

/**
 * Issue 27's write cost: the audit listener keeps each customer's enabled webhook endpoints in
 * memory (webhooks/service.ts), so on PostgreSQL writes to `webhooks` notify the change feed like
 * those of migrations 0008 and 0017 (SQLite needs nothing: data_version covers every table).
 */
export function auditWriteCostMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create trigger latchkey_notify_change after insert or update or delete or truncate on webhooks
        for each statement execute function latchkey_notify_change()`.execute(db);
    },
  };
}
