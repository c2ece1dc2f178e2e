import type { Kysely } from 'kysely';

/**
 * Drops users.wire_record (added by 0007): listings render the user record from the row, so a row
 * changed by hand can no longer disagree with what the API answers. SQLite drops columns from 3.35.
 */
export function dropUserWireRecordMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('users').dropColumn('wire_record').execute();
    },
  };
}
