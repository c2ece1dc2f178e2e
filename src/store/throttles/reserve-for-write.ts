/**
 * A place under a cap reserved for one database write (the magic-link generate cap: a link and its
 * mail count only if they are written). Either store gives the same guarantee: a write that fails
 * leaves the count as it was, and concurrent writers on any node stay within the budget.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../schema.ts';
import type { ThrottleRequest, ThrottleStore } from './types.ts';

export type ReservedWrite<T> = { value: T } | { refused: { key: string; blockedUntil: number } };

/**
 * Runs `write` in a transaction of `db` with one attempt of `request` reserved. The database store
 * reserves inside that transaction (it commits with the write or not at all, and costs no commit of
 * its own); Redis cannot join it, so the place is reserved before the transaction and given back if
 * the transaction fails. A refused reservation writes nothing.
 * @throws the write's error, or the store's (the caller refuses: fails closed).
 */
export async function reserveForWrite<T>(
  store: ThrottleStore,
  db: Kysely<Database>,
  request: ThrottleRequest,
  now: number,
  windowStart: number,
  write: (trx: Transaction<Database>) => Promise<T>,
): Promise<ReservedWrite<T>> {
  if (store.joinsTransactions) {
    return db.transaction().execute(async (trx): Promise<ReservedWrite<T>> => {
      const outcome = await store.reserve([request], now, windowStart, trx);
      if ('refused' in outcome) return outcome;
      return { value: await write(trx) };
    });
  }
  const outcome = await store.reserve([request], now, windowStart);
  if ('refused' in outcome) return outcome;
  try {
    return { value: await db.transaction().execute(write) };
  } catch (error) {
    // The write's error is the answer; if the store cannot be reached either, the place stays taken
    // until its window ends (a lost place under a cap, never an extra one).
    await store.unreserve(request.key, outcome.reserved[0]!).catch(() => {});
    throw error;
  }
}
