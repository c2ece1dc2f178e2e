import type { Kysely } from 'kysely';

/**
 * Group names for a page of users are read by (customer_id, user_id range): without this index the
 * database walked every membership of the customer for each page.
 */
export function groupMembersByUserMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('group_members_customer_user').on('group_members').columns(['customer_id', 'user_id', 'id']).execute();
    },
  };
}
