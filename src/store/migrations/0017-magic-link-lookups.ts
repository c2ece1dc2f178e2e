import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';

/**
 * What magic links look things up by:
 * - applications and login policies join the tables whose reads nodes keep in memory (generate and
 *   the landing read them on every request), so on PostgreSQL their writes notify the change feed
 *   like those of migration 0008;
 * - indexes led by the columns that deletes cascade through: deleting a user, an application or a
 *   consumed link scanned magic_links or the pending logins before. The index on
 *   (customer_id, user_id, application_id) is replaced by one led by user_id (a user id names its
 *   customer already), which serves both the user's invites and the cascade.
 */
export function magicLinkLookupsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('magic_links_user').execute();
      await db.schema.createIndex('magic_links_by_user').on('magic_links').columns(['user_id', 'application_id']).execute();
      await db.schema.createIndex('magic_links_by_application').on('magic_links').column('application_id').execute();
      await db.schema.createIndex('magic_link_pending_logins_by_link').on('magic_link_pending_logins').column('link_id').execute();
      if (dialect !== 'postgres') return;
      for (const table of ['applications', 'login_policies']) {
        await sql`create trigger latchkey_notify_change after insert or update or delete or truncate on ${sql.table(table)}
          for each statement execute function latchkey_notify_change()`.execute(db);
      }
    },
  };
}
