import type { Kysely } from 'kysely';

/**
 * SAML applications' service-provider settings (DESIGN.md, SAML applications): the SP's entity ID
 * (unique per customer; null for the other types, and NULLs never collide in a unique index on either
 * store), its assertion consumer service URLs (a JSON text array like the other URL lists; the first is
 * the default), the NameID format, the single-logout URL and the PEM certificate its requests are signed with.
 */
export function samlApplicationsMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('applications').addColumn('saml_entity_id', 'text').execute();
      await db.schema.alterTable('applications').addColumn('acs_urls', 'text', (c) => c.notNull().defaultTo('[]')).execute();
      await db.schema.alterTable('applications').addColumn('name_id_format', 'text').execute();
      await db.schema.alterTable('applications').addColumn('slo_url', 'text').execute();
      await db.schema.alterTable('applications').addColumn('sp_certificate', 'text').execute();
      await db.schema.createIndex('applications_saml_entity_id').unique().on('applications').columns(['customer_id', 'saml_entity_id']).execute();
    },
  };
}
