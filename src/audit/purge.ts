/**
 * Deletes audit events older than the retention (LATCHKEY_AUDIT_RETENTION_DAYS, default 90), one
 * customer at a time in batches through the (customer, time) index, so no statement holds a lock
 * for long. One node of the cluster runs it per interval (store/cluster-jobs.ts); "older than" only
 * ever becomes true, so a run repeated by another node or after a crash deletes the same rows or none.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import { clusterJob, type ClusterJob } from '../store/cluster-jobs.ts';
import type { Database } from '../store/schema.ts';
import * as repo from './repo.ts';

export const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_AUDIT_PURGE_INTERVAL_MS = 60 * 60 * 1000;
const BATCH = 1000;

/** Deletes every event with a time before `before`; returns how many. */
export async function purgeAuditEvents(db: Kysely<Database>, before: number): Promise<number> {
  let total = 0;
  for (const customerId of await repo.customersWithEventsBefore(db, before)) {
    for (;;) {
      const deleted = await repo.deleteEventsBefore(db, customerId, before, BATCH);
      total += deleted;
      if (deleted < BATCH) break;
    }
  }
  return total;
}

export function auditPurgeJob(opts: {
  db: Kysely<Database>;
  clock: Clock;
  retentionDays: number;
  intervalMs?: number;
  onError?(error: unknown): void;
}): ClusterJob {
  return clusterJob({
    db: opts.db,
    clock: opts.clock,
    name: 'audit-purge',
    intervalMs: opts.intervalMs ?? DEFAULT_AUDIT_PURGE_INTERVAL_MS,
    run: () => purgeAuditEvents(opts.db, opts.clock.now() - opts.retentionDays * DAY_MS),
    onError: opts.onError,
  });
}
