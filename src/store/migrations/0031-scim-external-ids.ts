import type { Kysely } from 'kysely';

/**
 * SCIM filters find users and groups by `externalId` (Okta and Entra ID match their records by it):
 * one index each, scoped by customer, so the lookup is not a scan of the customer's rows.
 */
export function scimExternalIdsMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('users_customer_scim_external_id').on('users').columns(['customer_id', 'scim_external_id']).execute();
      await db.schema.createIndex('groups_customer_scim_external_id').on('groups').columns(['customer_id', 'scim_external_id']).execute();
    },
  };
}
