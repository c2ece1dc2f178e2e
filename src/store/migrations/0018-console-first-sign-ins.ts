import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull } from './helpers.ts';

/**
 * The owner's one-time sign-in links printed by the first start: looked up by the SHA-256 of a 256-bit
 * token (a read of the table opens no console), used once (used_at set by one conditional update), and
 * kept after use or expiry so the page can say which it was.
 */
export function consoleFirstSignInsMigration(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('console_first_sign_ins')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('created_at', instant, notNull)
        .addColumn('expires_at', instant, notNull)
        .addColumn('used_at', instant)
        .execute();
      await db.schema.createIndex('console_first_sign_ins_customer').on('console_first_sign_ins').columns(['customer_id']).execute();
    },
  };
}
