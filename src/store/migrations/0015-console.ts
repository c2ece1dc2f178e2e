import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull } from './helpers.ts';

/**
 * The admin console: its sessions (looked up by the SHA-256 of a 256-bit cookie value, so a read of
 * the table opens no session) and the owner's optional authenticator, sealed like the API key. The
 * owner's console password is the existing customers.password_hash.
 */
export function consoleMigration(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('console_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // 'code': the password was right, the authenticator code is still due; 'active': signed in.
        .addColumn('stage', 'text', notNull)
        // Codes tried in the 'code' stage (reserved before each check).
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', instant, notNull)
        .addColumn('last_seen_at', instant, notNull)
        // The absolute end, whatever the activity.
        .addColumn('expires_at', instant, notNull)
        .execute();
      await db.schema.createIndex('console_sessions_customer').on('console_sessions').columns(['customer_id']).execute();
      await db.schema.createIndex('console_sessions_expiry').on('console_sessions').columns(['expires_at']).execute();
      await db.schema.alterTable('customers').addColumn('console_totp_sealed', 'text').execute();
      await db.schema.alterTable('customers').addColumn('console_totp_pending_sealed', 'text').execute();
      // The last accepted code's time step: a code is accepted once (RFC 6238 §5.2).
      await db.schema.alterTable('customers').addColumn('console_totp_last_step', instant).execute();
    },
  };
}
