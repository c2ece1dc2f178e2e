import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * A user's way back in:
 * - recovery codes: ten per user, each a slot 0..9 holding a keyed hash (HMAC-SHA256 under a key derived
 *   from the master key), deleted when used. (user_id, slot) is unique, so two concurrent regenerations
 *   cannot leave twenty: the later one meets the earlier one's rows and starts again;
 * - password resets: a mailed link's token as SHA-256, 30 minutes, used once (used_at set by one
 *   conditional update).
 * Both go with their user.
 */
export function recoveryMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('recovery_codes'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('slot', 'integer', notNull)
        .addColumn('code_hash', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('recovery_codes_user_slot').unique().on('recovery_codes').columns(['user_id', 'slot']).execute();

      await withId(db.schema.createTable('password_resets'), dialect)
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', instant, notNull)
        .addColumn('expires_at', instant, notNull)
        .addColumn('used_at', instant)
        .execute();
      await db.schema.createIndex('password_resets_user').on('password_resets').columns(['customer_id', 'user_id']).execute();
      await db.schema.createIndex('password_resets_expiry').on('password_resets').columns(['expires_at']).execute();
    },
  };
}
