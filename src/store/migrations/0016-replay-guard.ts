import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull } from './helpers.ts';

/**
 * State every node must share: the admin replay guard's seen triples (identity/replay-guard.ts) and
 * the claims that make a periodic job run once per cluster (store/cluster-jobs.ts).
 */
export function replayGuardMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      // UNLOGGED on PostgreSQL: no WAL for a row per signed request. A crash empties the table,
      // which reopens at most one timestamp window for triples seen before it; a replica does not
      // need it (a standby serves no admin writes).
      if (dialect === 'postgres') {
        await sql`create unlogged table admin_replay_guard (
          digest_prefix text primary key,
          first_seen bigint not null,
          expires_at bigint not null
        )`.execute(db);
      } else {
        await db.schema.createTable('admin_replay_guard')
          .addColumn('digest_prefix', 'text', (c) => c.primaryKey())
          .addColumn('first_seen', instant, notNull)
          .addColumn('expires_at', instant, notNull)
          .execute();
      }
      // The batched expiry deletes by it.
      await db.schema.createIndex('admin_replay_guard_expiry').on('admin_replay_guard').column('expires_at').execute();

      await db.schema.createTable('scheduler_runs')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('next_run_at', instant, notNull)
        .addColumn('last_run_at', instant, notNull)
        .addColumn('last_node', 'text', notNull)
        .addColumn('runs', 'bigint', notNull)
        .execute();
    },
  };
}
