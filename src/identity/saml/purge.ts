/**
 * Deletes SAML request IDs once their requests would be refused as too old anyway, and held requests
 * once expired. Both conditions only ever become true, so a run repeated by another node deletes the
 * same rows or none. One node of the cluster runs it per interval (store/cluster-jobs.ts).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { clusterJob, type ClusterJob } from '../../store/cluster-jobs.ts';
import type { Database } from '../../store/schema.ts';
import { purgeExpired } from './repo.ts';

export const SAML_PURGE_INTERVAL_MS = 10 * 60_000;

export function samlPurgeJob(opts: { db: Kysely<Database>; clock: Clock; intervalMs?: number; onError?(error: unknown): void }): ClusterJob {
  return clusterJob({
    db: opts.db,
    clock: opts.clock,
    name: 'saml-purge',
    intervalMs: opts.intervalMs ?? SAML_PURGE_INTERVAL_MS,
    run: () => purgeExpired(opts.db, opts.clock.now()),
    onError: opts.onError,
  });
}
