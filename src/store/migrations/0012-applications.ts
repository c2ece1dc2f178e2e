import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * Applications (JWT, OAUTH, SAML), their login policies and OAuth clients. Secrets are never stored:
 * an OAuth client keeps the SHA-256 of its secret; an OAUTH application keeps the salt its secret is
 * derived from (with the master key) and the secret's SHA-256.
 */
export function applicationsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('applications'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('uuid', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', notNull)
        .addColumn('type', 'text', notNull)
        // JSON text arrays of absolute URLs.
        .addColumn('return_urls', 'text', notNull)
        .addColumn('redirect_uris', 'text', notNull)
        .addColumn('login_urls', 'text', notNull)
        .addColumn('client_secret_salt', 'text')
        .addColumn('client_secret_hash', 'text')
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('applications_customer').on('applications').columns(['customer_id', 'id']).execute();

      await withId(db.schema.createTable('login_policies'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // Deleting an application deletes its policies with it.
        .addColumn('application_id', 'bigint', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('first_factor', 'text', notNull)
        .addColumn('second_factor', 'text', notNull)
        .addColumn('group_name', 'text')
        // '' for the application-wide policy: a unique index treats NULLs as distinct on both databases.
        .addColumn('group_name_norm', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('login_policies_application_group').unique().on('login_policies')
        .columns(['application_id', 'group_name_norm']).execute();
      await db.schema.createIndex('login_policies_customer').on('login_policies').columns(['customer_id', 'id']).execute();

      await withId(db.schema.createTable('oauth_clients'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', notNull)
        // SHA-256 hex of the secret: the secret itself is shown once and never stored.
        .addColumn('secret_hash', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .execute();
      await db.schema.createIndex('oauth_clients_customer').on('oauth_clients').columns(['customer_id', 'id']).execute();
    },
  };
}
