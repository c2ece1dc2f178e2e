import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/** The transactional outbox of mails (see src/mail/outbox.ts): written with the row that causes the mail. */
export function mailOutboxMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('mail_outbox'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('template', 'text', notNull)
        .addColumn('to_address', 'text', notNull)
        // The template's parameters (a magic link among them) sealed under the master key; NULL once sent.
        .addColumn('sealed_data', 'text')
        // Fixed at enqueue, so a resend after a crash carries the same Message-ID.
        .addColumn('message_id', 'text', (c) => c.notNull().unique())
        .addColumn('status', 'text', notNull)
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', instant, notNull)
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', instant)
        .addColumn('last_error', 'text')
        .addColumn('created_at', instant, notNull)
        .addColumn('sent_at', instant)
        .execute();
      // The claim query: pending rows that are due, oldest first.
      await db.schema.createIndex('mail_outbox_due').on('mail_outbox').columns(['status', 'next_attempt_at', 'id']).execute();
      // Deleting a customer cascades here.
      await db.schema.createIndex('mail_outbox_customer').on('mail_outbox').columns(['customer_id']).execute();
    },
  };
}
