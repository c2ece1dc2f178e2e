import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * Passkeys (WebAuthn credentials) and their ceremonies:
 * - passkeys: a user's (user_id) or the customer's console owner's (user_id null) credential: its ID and
 *   COSE public key (base64url; public, nothing secret is stored), the signature counter kept to spot a
 *   cloned authenticator, transports (JSON) for the browser's hints. credential_id is unique across
 *   customers: one authenticator credential belongs to one holder. They go with their user or customer.
 * - passkey_ceremonies: an issued challenge, its id stored as SHA-256, taken once (delete … returning) and
 *   refused after expires_at (5 minutes). holder_kind 'user' | 'owner' | 'any' (a username-less sign-in,
 *   which names nobody); purpose 'register' | 'authenticate'.
 */
export function passkeysMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('passkeys'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('credential_id', 'text', (c) => c.notNull().unique())
        .addColumn('public_key', 'text', notNull)
        .addColumn('counter', 'bigint', notNull)
        .addColumn('transports', 'text', notNull)
        .addColumn('device_type', 'text', notNull)
        .addColumn('backed_up', 'integer', notNull)
        .addColumn('name', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .addColumn('last_used_at', instant)
        .execute();
      await db.schema.createIndex('passkeys_holder').on('passkeys').columns(['customer_id', 'user_id']).execute();

      await withId(db.schema.createTable('passkey_ceremonies'), dialect)
        .addColumn('id_hash', 'text', (c) => c.notNull().unique())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('holder_kind', 'text', notNull)
        .addColumn('purpose', 'text', notNull)
        .addColumn('challenge', 'text', notNull)
        .addColumn('expires_at', instant, notNull)
        .execute();
      await db.schema.createIndex('passkey_ceremonies_expiry').on('passkey_ceremonies').columns(['expires_at']).execute();
    },
  };
}
