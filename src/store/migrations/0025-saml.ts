import type { Kysely } from 'kysely';
import { instant, notNull } from './helpers.ts';

/**
 * The SAML identity provider's state (DESIGN.md, SAML applications). `saml_request_ids`: each
 * AuthnRequest ID a customer has answered, kept until that request would be refused as too old anyway;
 * the unique index makes the second of two concurrent replays fail. `saml_requests`: a checked request
 * waiting for the browser to sign in (it may come back on another node), 15 minutes like a sign-in
 * flow; its id is in the continue URL and only its SHA-256 is stored, bound to the browser by the
 * SHA-256 of a cookie value.
 */
export function samlMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('saml_request_ids')
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('request_id', 'text', notNull)
        .addColumn('expires_at', instant, notNull)
        .addPrimaryKeyConstraint('saml_request_ids_pk', ['customer_id', 'request_id'])
        .execute();
      await db.schema.createIndex('saml_request_ids_expiry').on('saml_request_ids').column('expires_at').execute();

      await db.schema.createTable('saml_requests')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('application_id', 'bigint', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('application_uuid', 'text', notNull)
        .addColumn('browser_hash', 'text', notNull)
        .addColumn('acs_url', 'text', notNull)
        // null for an IdP-initiated sign-in (the Response then has no InResponseTo).
        .addColumn('request_id', 'text')
        .addColumn('relay_state', 'text')
        // ForceAuthn: '' until the browser is first sent to sign in, then the SHA-256 of the SSO cookie it had
        // then; the answer waits for a session opened after that (null: not forced).
        .addColumn('force_authn_after', 'text')
        // IsPassive: 1 when the request must not show the sign-in (answered NoPassive instead).
        .addColumn('is_passive', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', instant, notNull)
        .execute();
      await db.schema.createIndex('saml_requests_expiry').on('saml_requests').column('expires_at').execute();
      await db.schema.createIndex('saml_requests_by_application').on('saml_requests').column('application_id').execute();
    },
  };
}
