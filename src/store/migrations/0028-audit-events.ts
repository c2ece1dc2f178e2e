import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * The audit log. `id` only grows: the read cursor is "ids below the last one seen", so events written
 * while someone pages land above the cursor and never shift a page. Every index leads with the
 * customer (no read crosses tenants) and ends with the id (newest first within each filter):
 * all events, an action prefix (a range on action), one target, a time window (also the purge's).
 */
export function auditEventsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('audit_events'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('event_id', 'text', notNull)
        .addColumn('time', instant, notNull)
        // Byte order on PostgreSQL too (SQLite compares bytes already): an action prefix is a range on the
        // index, and a locale's collation would sort "user.x" apart from "user.y" by ignoring the dot.
        .addColumn('action', 'text', (c) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c).notNull())
        .addColumn('actor_type', 'text', notNull)
        .addColumn('actor_id', 'text', notNull)
        .addColumn('target_type', 'text', notNull)
        .addColumn('target_id', 'text', notNull)
        .addColumn('target_name', 'text', notNull)
        .addColumn('ip', 'text', notNull)
        .addColumn('request_id', 'text', notNull)
        .addColumn('correlation_id', 'text', notNull)
        .execute();
      await db.schema.createIndex('audit_events_newest').on('audit_events').columns(['customer_id', 'id']).execute();
      await db.schema.createIndex('audit_events_action').on('audit_events').columns(['customer_id', 'action', 'id']).execute();
      await db.schema.createIndex('audit_events_target').on('audit_events').columns(['customer_id', 'target_id', 'id']).execute();
      await db.schema.createIndex('audit_events_time').on('audit_events').columns(['customer_id', 'time', 'id']).execute();
    },
  };
}
