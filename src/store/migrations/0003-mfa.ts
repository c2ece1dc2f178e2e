import type { Kysely } from 'kysely';
import { instant, notNull } from './helpers.ts';

/** One authenticator row per user: a pending registration and/or the active secret, both sealed. */
export function mfaMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('mfa_authenticators')
        .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('pending_secret_sealed', 'text')
        .addColumn('pending_created_at', instant)
        .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('active_secret_sealed', 'text')
        .addColumn('activated_at', instant)
        .addColumn('last_step', 'bigint', (c) => c.notNull().defaultTo(-1))
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
      await db.schema.createIndex('mfa_authenticators_customer').on('mfa_authenticators').columns(['customer_id', 'user_id']).execute();
    },
  };
}
