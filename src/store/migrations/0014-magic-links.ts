import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * INVITE magic links, the pending second-factor logins of their landing, and the OAuth 2.0 access
 * tokens of POST /oauth/token. No secret is stored: links, pending logins and access tokens are
 * looked up by the SHA-256 of a 256-bit random value that only the user (or client) holds.
 */
export function magicLinksMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('magic_links'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        // Deleting an application deletes its links with it.
        .addColumn('application_id', 'bigint', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        // 'INVITE' (the only type the spec has).
        .addColumn('type', 'text', notNull)
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        // Where the landing sends the user (JWT, OAUTH); null for SAML.
        .addColumn('redirect_uri', 'text')
        .addColumn('expires_at', instant, notNull)
        .addColumn('created_at', instant, notNull)
        .addColumn('consumed_at', instant)
        .addColumn('revoked_at', instant)
        .addColumn('correlation_id', 'text', notNull)
        .execute();
      await db.schema.createIndex('magic_links_user').on('magic_links').columns(['customer_id', 'user_id', 'application_id']).execute();
      // At most one unused, unrevoked INVITE per user and application: two generates racing cannot
      // both leave a live link (the loser retries and replaces the winner's).
      await db.schema.createIndex('magic_links_one_open_invite').unique().on('magic_links').columns(['user_id', 'application_id'])
        .where(sql.ref('consumed_at'), 'is', null).where(sql.ref('revoked_at'), 'is', null).where(sql.ref('type'), '=', 'INVITE').execute();

      // A link consumed by a user whose policy asks for an authenticator code: the browser holds the id.
      await db.schema.createTable('magic_link_pending_logins')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('link_id', 'bigint', (c) => c.notNull().references('magic_links.id').onDelete('cascade'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', instant, notNull)
        .execute();

      await withId(db.schema.createTable('oauth_access_tokens'), dialect)
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // The oauth_clients row: deleting the client ends its tokens.
        .addColumn('client_id', 'bigint', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
        .addColumn('scope', 'text', notNull)
        .addColumn('expires_at', instant, notNull)
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('oauth_access_tokens_expiry').on('oauth_access_tokens').columns(['expires_at']).execute();
    },
  };
}
