/**
 * Claiming rows of an outbox table (mail_outbox, webhook_deliveries): a lease (claimed_by,
 * claimed_until) so every node may run a worker, each row goes to one of them, and a crashed
 * worker's rows come back once its lease runs out.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Dialect, Executor } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

/** The tables that are outboxes: each has these columns. */
export type OutboxTable = 'mail_outbox' | 'webhook_deliveries';

interface LeaseColumns {
  id: number;
  status: string;
  next_attempt_at: number;
  claimed_by: string | null;
  claimed_until: number | null;
}

export interface ClaimOptions {
  workerId: string;
  now: number;
  /** How long the claim holds; after it another worker may take the row (its worker crashed). */
  leaseMs: number;
  limit: number;
}

/**
 * Claims up to `limit` due rows ('pending', next_attempt_at passed, no live lease) for `workerId`
 * in one statement, oldest first. On PostgreSQL the inner SELECT locks with SKIP LOCKED, so
 * concurrent claimers take disjoint rows without waiting on each other; SQLite runs a writing
 * statement under its single write lock, which serialises claimers.
 */
export async function claimDueRows<T extends OutboxTable>(db: Executor, dialect: Dialect, table: T, { workerId, now, leaseMs, limit }: ClaimOptions): Promise<Selectable<Database[T]>[]> {
  // The query needs only the lease columns, which every outbox table has.
  const leased = db as unknown as Kysely<Record<OutboxTable, LeaseColumns>>;
  const rows = await leased.updateTable(table as OutboxTable)
    .set({ claimed_by: workerId, claimed_until: now + leaseMs })
    .where('id', 'in', (eb) => {
      const due = eb.selectFrom(table as OutboxTable).select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<', now)]))
        .orderBy('id')
        .limit(limit);
      return dialect === 'postgres' ? due.forUpdate().skipLocked() : due;
    })
    // Re-checked on the row itself: on PostgreSQL a row claimed meanwhile by another statement is left alone.
    .where('status', '=', 'pending')
    .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<', now)]))
    .returningAll()
    .execute();
  return rows.sort((a, b) => Number(a.id) - Number(b.id)) as unknown as Selectable<Database[T]>[];
}
