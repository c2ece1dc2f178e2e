import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * SCIM 2.0 (src/scim/): the customers' bearer tokens, stored as their SHA-256 only, and the
 * `externalId` a directory (Okta, Entra ID) keeps on each user and group it provisions.
 */
export function scimMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('scim_tokens'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // The public id, `st_…`.
        .addColumn('token_id', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', notNull)
        // SHA-256 hex of the token: a request's token is looked up by its hash, never stored.
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', instant, notNull)
        .addColumn('last_used_at', instant)
        .execute();
      await db.schema.createIndex('scim_tokens_customer').on('scim_tokens').columns(['customer_id']).execute();

      await db.schema.alterTable('users').addColumn('scim_external_id', 'text').execute();
      await db.schema.alterTable('groups').addColumn('scim_external_id', 'text').execute();
    },
  };
}
