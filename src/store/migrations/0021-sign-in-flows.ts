import type { Kysely } from 'kysely';
import { instant, notNull } from './helpers.ts';

/**
 * Hosted sign-in flows ("who may sign in, to which application, then where"), 15 minutes each. The
 * flow's id is in the sign-in page's URL and only its SHA-256 is stored; the flow is bound to the
 * browser that started it by the SHA-256 of a cookie value. A mailed LOGIN code is kept only as an
 * HMAC keyed by that cookie value, so the table alone cannot be searched for the 6 digits.
 */
export function signInFlowsMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('sign_in_flows')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('application_id', 'bigint', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        // The UUID, which the applications service finds applications by; the id deletes the flow with them.
        .addColumn('application_uuid', 'text', notNull)
        .addColumn('return_to', 'text', notNull)
        .addColumn('browser_hash', 'text', notNull)
        // null until identified, and for a login that names nobody (the flow then plays a known user's part).
        .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('login', 'text')
        .addColumn('step', 'text', notNull)
        // RFC 8176 values shown in this flow (those of the browser's session included), JSON.
        .addColumn('amr', 'text', notNull)
        .addColumn('link_id', 'bigint', (c) => c.references('magic_links.id').onDelete('set null'))
        .addColumn('code_hash', 'text')
        .addColumn('code_attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', instant, notNull)
        .addColumn('expires_at', instant, notNull)
        .execute();
      await db.schema.createIndex('sign_in_flows_expiry').on('sign_in_flows').column('expires_at').execute();
      await db.schema.createIndex('sign_in_flows_by_user').on('sign_in_flows').column('user_id').execute();
      await db.schema.createIndex('sign_in_flows_by_application').on('sign_in_flows').column('application_id').execute();
      await db.schema.createIndex('sign_in_flows_by_link').on('sign_in_flows').column('link_id').execute();
    },
  };
}
