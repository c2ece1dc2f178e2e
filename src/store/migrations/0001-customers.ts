import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

export function customersMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('customers'), dialect)
        .addColumn('customer_key', 'text', (c) => c.notNull().unique())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('display_name', 'text', notNull)
        .addColumn('api_key_sealed', 'text', notNull)
        .addColumn('password_hash', 'text')
        .addColumn('password_expiry_days', 'integer')
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
    },
  };
}
