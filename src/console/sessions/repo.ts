/** console_sessions rows, by the SHA-256 of the cookie value. */
import type { Executor } from '../../store/db.ts';

export interface SessionRow {
  idHash: string;
  customerId: number;
  stage: 'code' | 'active';
  attempts: number;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
}

export async function insertSession(db: Executor, row: Omit<SessionRow, 'attempts'>): Promise<void> {
  await db.insertInto('console_sessions').values({
    id_hash: row.idHash, customer_id: row.customerId, stage: row.stage,
    created_at: row.createdAt, last_seen_at: row.lastSeenAt, expires_at: row.expiresAt,
  }).execute();
}

export async function findSession(db: Executor, idHash: string): Promise<SessionRow | undefined> {
  const row = await db.selectFrom('console_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
  return row && {
    idHash: row.id_hash, customerId: Number(row.customer_id), stage: row.stage, attempts: row.attempts,
    createdAt: Number(row.created_at), lastSeenAt: Number(row.last_seen_at), expiresAt: Number(row.expires_at),
  };
}

export async function touchSession(db: Executor, idHash: string, now: number): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).where('last_seen_at', '<', now).execute();
}

/** One more code tried, unless `max` were tried already. @returns false when none is left. */
export async function reserveAttempt(db: Executor, idHash: string, max: number): Promise<boolean> {
  const result = await db.updateTable('console_sessions').set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id_hash', '=', idHash).where('attempts', '<', max).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** @returns whether this call deleted it (of two concurrent promotions, one wins). */
export async function deleteSession(db: Executor, idHash: string): Promise<boolean> {
  const result = await db.deleteFrom('console_sessions').where('id_hash', '=', idHash).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteCustomerSessions(db: Executor, customerId: number): Promise<void> {
  await db.deleteFrom('console_sessions').where('customer_id', '=', customerId).execute();
}

export async function purgeExpired(db: Executor, now: number, idleBefore: number): Promise<void> {
  await db.deleteFrom('console_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)])).execute();
}
