import type { Kysely } from 'kysely';

/**
 * Each user's listing record (the spec's user record less `groups`) as JSON, written with the row:
 * a users/getall page then reads 500 short texts instead of building 500 objects and serialising them
 * again. Null for rows written before this column existed; listings compute those on the fly.
 */
export function userWireRecordMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('users').addColumn('wire_record', 'text').execute();
    },
  };
}
