import type { Kysely } from 'kysely';
import { instant, notNull } from './helpers.ts';

/**
 * What the console's users pages show beyond the admin API's record:
 * - a password set by an administrator can be marked to be changed at the next sign-in (the user's own
 *   change clears it);
 * - each user's last sign-in, in a table of its own: a sign-in writes there, not to users, so the nodes'
 *   kept user answers (which follow the users table) stay valid.
 */
export function consoleUsersMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('users').addColumn('password_change_required', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.createTable('user_sign_ins')
        .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('signed_in_at', instant, notNull)
        .execute();
    },
  };
}
