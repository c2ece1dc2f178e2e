/** sso_sessions rows, by the SHA-256 of the cookie value. */
import type { Executor } from '../../store/db.ts';
import type { AuthMethod, SsoSession } from './types.ts';

interface SessionRow {
  id: number | string;
  customer_id: number | string;
  user_id: number | string;
  credentials_version: number;
  amr: string;
  user_agent: string;
  address: string;
  created_at: number | string;
  last_seen_at: number | string;
  expires_at: number | string;
}

function toSession(row: SessionRow): SsoSession {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    userId: Number(row.user_id),
    credentialsVersion: Number(row.credentials_version),
    amr: JSON.parse(row.amr) as AuthMethod[],
    userAgent: row.user_agent,
    address: row.address,
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    expiresAt: Number(row.expires_at),
  };
}

export async function insertSession(db: Executor, idHash: string, session: Omit<SsoSession, 'id'>): Promise<SsoSession> {
  const row = await db.insertInto('sso_sessions').values({
    id_hash: idHash,
    customer_id: session.customerId,
    user_id: session.userId,
    credentials_version: session.credentialsVersion,
    amr: JSON.stringify(session.amr),
    user_agent: session.userAgent,
    address: session.address,
    created_at: session.createdAt,
    last_seen_at: session.lastSeenAt,
    expires_at: session.expiresAt,
  }).returning('id').executeTakeFirstOrThrow();
  return { ...session, id: Number(row.id) };
}

export async function findSession(db: Executor, customerId: number, idHash: string): Promise<SsoSession | undefined> {
  const row = await db.selectFrom('sso_sessions').selectAll().where('id_hash', '=', idHash).where('customer_id', '=', customerId).executeTakeFirst();
  return row && toSession(row);
}

export async function touchSession(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('sso_sessions').set({ last_seen_at: now }).where('id', '=', id).where('last_seen_at', '<', now).execute();
}

/** @returns whether this call deleted it (of two concurrent step-ups, one wins). */
export async function deleteSession(db: Executor, customerId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('sso_sessions').where('id', '=', id).where('customer_id', '=', customerId).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteUserSessions(db: Executor, customerId: number, userId: number, only?: number): Promise<number> {
  let query = db.deleteFrom('sso_sessions').where('customer_id', '=', customerId).where('user_id', '=', userId);
  if (only !== undefined) query = query.where('id', '=', only);
  return Number((await query.executeTakeFirst()).numDeletedRows);
}

export async function listUserSessions(db: Executor, customerId: number, userId: number, liveAfter: { now: number; idleBefore: number }): Promise<SsoSession[]> {
  const rows = await db.selectFrom('sso_sessions').selectAll()
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .where('expires_at', '>', liveAfter.now).where('last_seen_at', '>', liveAfter.idleBefore)
    .orderBy('last_seen_at', 'desc').orderBy('id', 'desc')
    .execute();
  return rows.map(toSession);
}

export async function purgeEnded(db: Executor, now: number, idleBefore: number): Promise<void> {
  await db.deleteFrom('sso_sessions').where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleBefore)])).execute();
}
