/**
 * Deletes what the magic-link flow leaves behind: links used, revoked or expired for more than a
 * week (kept that long so an admin can still see what happened to a recent invite), pending
 * authenticator-code logins and OAuth access tokens once expired, and outbox rows sent (or given up)
 * more than 30 days ago; the job also deletes password resets expired as long ago as links are kept
 * (password-resets/purge.ts). One node of the cluster runs it per interval (store/cluster-jobs.ts).
 *
 * Every condition only ever becomes true (a used link stays used, an expired token stays expired),
 * so the DELETEs are idempotent: a run repeated by another node or after a crash deletes the same
 * rows or none. The tables have no index on these columns; each is walked once by id in batches
 * (keyset: the next batch starts after the last id seen), so a large table is one scan per run and
 * no statement holds a lock for long.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { clusterJob, type ClusterJob } from '../../store/cluster-jobs.ts';
import type { Database } from '../../store/schema.ts';
import { purgePasswordResets } from '../password-resets/purge.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 500;

export interface PurgeRetention {
  /** How long used, revoked and expired links are kept. */
  linkMs: number;
  /** How long sent (and given-up) mails are kept. */
  mailMs: number;
}

export const DEFAULT_RETENTION: PurgeRetention = { linkMs: 7 * DAY_MS, mailMs: 30 * DAY_MS };
export const DEFAULT_PURGE_INTERVAL_MS = 60 * 60 * 1000;

export interface PurgeCounts {
  magicLinks: number;
  pendingLogins: number;
  accessTokens: number;
  mails: number;
}

/** Selects the ids of one batch after `afterId`; they are then deleted by id. */
type BatchSelect = (afterId: number) => Promise<{ id: number | string | bigint }[]>;

async function deleteInBatches(db: Kysely<Database>, table: 'magic_links' | 'oauth_access_tokens' | 'mail_outbox', select: BatchSelect): Promise<number> {
  let afterId = 0;
  let total = 0;
  for (;;) {
    const ids = (await select(afterId)).map((row) => Number(row.id));
    if (ids.length === 0) return total;
    const result = await db.deleteFrom(table).where('id', 'in', ids).executeTakeFirst();
    total += Number(result.numDeletedRows);
    if (ids.length < BATCH) return total;
    afterId = ids[ids.length - 1]!;
  }
}

export async function purgeMagicLinkData(db: Kysely<Database>, now: number, retention: PurgeRetention = DEFAULT_RETENTION): Promise<PurgeCounts> {
  const linksBefore = now - retention.linkMs;
  const mailsBefore = now - retention.mailMs;

  // Pending logins first: they reference links (a cascade would delete them anyway).
  const pending = await db.deleteFrom('magic_link_pending_logins').where('expires_at', '<=', now).executeTakeFirst();

  const magicLinks = await deleteInBatches(db, 'magic_links', (afterId) => db.selectFrom('magic_links').select('id')
    .where('id', '>', afterId)
    .where((eb) => eb.or([
      eb('consumed_at', '<', linksBefore),
      eb('revoked_at', '<', linksBefore),
      eb('expires_at', '<', linksBefore),
    ]))
    .orderBy('id').limit(BATCH).execute());

  const accessTokens = await deleteInBatches(db, 'oauth_access_tokens', (afterId) => db.selectFrom('oauth_access_tokens').select('id')
    .where('id', '>', afterId).where('expires_at', '<=', now)
    .orderBy('id').limit(BATCH).execute());

  // A given-up mail has no sent_at: its age is counted from when it was enqueued (it failed for 3 days after).
  const mails = await deleteInBatches(db, 'mail_outbox', (afterId) => db.selectFrom('mail_outbox').select('id')
    .where('id', '>', afterId)
    .where((eb) => eb.or([
      eb.and([eb('status', '=', 'sent'), eb('sent_at', '<', mailsBefore)]),
      eb.and([eb('status', '=', 'failed'), eb('created_at', '<', mailsBefore)]),
    ]))
    .orderBy('id').limit(BATCH).execute());

  return { magicLinks, pendingLogins: Number(pending.numDeletedRows), accessTokens, mails };
}

/** The periodic purge, once per cluster per interval; a BackgroundTask for the server. */
export function magicLinkPurgeJob(opts: {
  db: Kysely<Database>;
  clock: Clock;
  intervalMs?: number;
  retention?: PurgeRetention;
  onError?(error: unknown): void;
  onPurged?(counts: PurgeCounts): void;
}): ClusterJob {
  return clusterJob({
    db: opts.db,
    clock: opts.clock,
    name: 'magic-link-purge',
    intervalMs: opts.intervalMs ?? DEFAULT_PURGE_INTERVAL_MS,
    run: async () => {
      const now = opts.clock.now();
      const counts = await purgeMagicLinkData(opts.db, now, opts.retention);
      // Forgotten-password links: the same kind of mailed, single-use link, kept as long.
      await purgePasswordResets(opts.db, now - (opts.retention ?? DEFAULT_RETENTION).linkMs);
      opts.onPurged?.(counts);
    },
    onError: opts.onError,
  });
}
