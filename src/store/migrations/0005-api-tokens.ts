import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

export function apiTokensMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('api_tokens'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // Deleting a user deletes their tokens with them.
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', notNull)
        .addColumn('type', 'text', notNull)
        // SHA-256 hex of the whole secret: the secret itself is never stored.
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', instant, notNull)
        .addColumn('expires_at', instant)
        .addColumn('last_used_at', instant)
        .execute();
      await db.schema.createIndex('api_tokens_user').on('api_tokens').columns(['customer_id', 'user_id', 'id']).execute();
      await db.schema.createIndex('api_tokens_expires').on('api_tokens').columns(['expires_at']).execute();

      // One row per user that ever created a token. Creating a token first writes this row, which
      // serialises concurrent creates of one user on both databases (PostgreSQL row lock, SQLite
      // write lock), so the per-user limit holds under concurrency.
      await db.schema.createTable('api_token_quotas')
        .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('updated_at', instant, notNull)
        .execute();
    },
  };
}
