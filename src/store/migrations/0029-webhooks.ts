import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * Webhook endpoints and their deliveries (src/webhooks/): a delivery is an outbox row written in the
 * transaction of the audit event it carries, claimed and sent by one node (src/outbox/).
 */
export function webhooksMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('webhooks'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // The public id, `wh_…`.
        .addColumn('webhook_id', 'text', (c) => c.notNull().unique())
        .addColumn('url', 'text', notNull)
        // JSON array of action prefixes; ["*"] for every event.
        .addColumn('events', 'text', notNull)
        // The signing secret sealed under the master key (aad: webhook_id): it signs, so it cannot be a hash.
        .addColumn('sealed_secret', 'text', notNull)
        .addColumn('enabled', 'integer', notNull)
        .addColumn('disabled_at', instant)
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('webhooks_customer').on('webhooks').columns(['customer_id']).execute();

      await withId(db.schema.createTable('webhook_deliveries'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('webhook_id', 'bigint', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
        // The Standard Webhooks message id (`msg_…`): the same on every attempt and on a resend.
        .addColumn('message_id', 'text', notNull)
        // The audit event, as JSON.
        .addColumn('event', 'text', notNull)
        .addColumn('status', 'text', notNull)
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', instant, notNull)
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', instant)
        .addColumn('last_status', 'integer')
        .addColumn('last_answer', 'text')
        .addColumn('last_error', 'text')
        .addColumn('created_at', instant, notNull)
        .addColumn('delivered_at', instant)
        .execute();
      // The claim query: pending rows that are due, oldest first.
      await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at', 'id']).execute();
      // An endpoint's recent deliveries (the console), and the cascade from its endpoint.
      await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_customer').on('webhook_deliveries').columns(['customer_id']).execute();
    },
  };
}
