import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * The end users' single sign-on sessions, one per browser and customer: the browser holds a 256-bit
 * random value, the table its SHA-256. `credentials_version` is the user's at sign-in: a password
 * change or reset (which bumps the user's) ends the session. `amr` lists the factors the session has
 * shown (RFC 8176 values, JSON), so that an application asking for more asks only for what is missing.
 */
export function ssoSessionsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('sso_sessions'), dialect)
        .addColumn('id_hash', 'text', (c) => c.notNull().unique())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('credentials_version', 'integer', notNull)
        .addColumn('amr', 'text', notNull)
        .addColumn('user_agent', 'text', notNull)
        .addColumn('address', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .addColumn('last_seen_at', instant, notNull)
        .addColumn('expires_at', instant, notNull)
        .execute();
      await db.schema.createIndex('sso_sessions_user').on('sso_sessions').columns(['customer_id', 'user_id']).execute();
      await db.schema.createIndex('sso_sessions_expiry').on('sso_sessions').columns(['expires_at']).execute();
    },
  };
}
