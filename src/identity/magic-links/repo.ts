/**
 * Queries on magic_links and magic_link_pending_logins. Scoped by customer, except the two lookups
 * by a secret's hash (the landing knows no customer: the token names it).
 */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { MagicLinksTable } from '../../store/schema.ts';
import { LINK_TYPE, LOGIN_LINK_TYPE, type LinkType, type MagicLink, type RecentLink } from './types.ts';

type LinkRow = Selectable<MagicLinksTable> & { uuid: string; customer_key: string };

function toLink(row: LinkRow): MagicLink {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    customerKey: row.customer_key,
    type: row.type as LinkType,
    userId: Number(row.user_id),
    applicationId: Number(row.application_id),
    applicationUuid: row.uuid,
    redirectUri: row.redirect_uri,
    expiresAt: Number(row.expires_at),
    consumedAt: row.consumed_at === null ? null : Number(row.consumed_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

/** Revokes the user's open INVITE for this application (replace-on-reinvite); resolves with how many. */
export async function revokeOpenInvite(db: Executor, customerId: number, userId: number, applicationId: number, now: number): Promise<number> {
  const result = await db.updateTable('magic_links').set({ revoked_at: now })
    .where('customer_id', '=', customerId).where('user_id', '=', userId).where('application_id', '=', applicationId)
    .where('type', '=', LINK_TYPE).where('consumed_at', 'is', null).where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Revokes every active (unused, unrevoked, unexpired) INVITE of the user; resolves with how many. */
export async function revokeActiveInvites(db: Executor, customerId: number, userId: number, now: number): Promise<number> {
  const result = await db.updateTable('magic_links').set({ revoked_at: now })
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .where('type', '=', LINK_TYPE).where('consumed_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function insertLink(db: Executor, customerId: number, values: {
  userId: number; applicationId: number; tokenHash: string; redirectUri: string | null; expiresAt: number; now: number; correlationId: string;
  /** Default INVITE; LOGIN for the hosted sign-in's mails. */
  type?: typeof LINK_TYPE | typeof LOGIN_LINK_TYPE;
}): Promise<number> {
  const row = await db.insertInto('magic_links').values({
    customer_id: customerId,
    user_id: values.userId,
    application_id: values.applicationId,
    type: values.type ?? LINK_TYPE,
    token_hash: values.tokenHash,
    redirect_uri: values.redirectUri,
    expires_at: values.expiresAt,
    created_at: values.now,
    consumed_at: null,
    revoked_at: null,
    correlation_id: values.correlationId,
  }).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

const linkQuery = (db: Executor) => db.selectFrom('magic_links')
  .innerJoin('applications', 'applications.id', 'magic_links.application_id')
  .innerJoin('customers', 'customers.id', 'magic_links.customer_id')
  .selectAll('magic_links')
  .select(['applications.uuid', 'customers.customer_key']);

/** The link whose token has this SHA-256, whatever its state (any customer). */
export async function findLinkByTokenHash(db: Executor, tokenHash: string): Promise<MagicLink | undefined> {
  const row = await linkQuery(db).where('magic_links.token_hash', '=', tokenHash).executeTakeFirst();
  return row && toLink(row as LinkRow);
}

export async function findLinkById(db: Executor, customerId: number, linkId: number): Promise<MagicLink | undefined> {
  const row = await linkQuery(db).where('magic_links.customer_id', '=', customerId).where('magic_links.id', '=', linkId).executeTakeFirst();
  return row && toLink(row as LinkRow);
}

/**
 * Uses the link up: one conditional UPDATE, so of concurrent consumers on any node exactly one
 * sees its row come back. True for that one.
 */
export async function consumeLink(db: Executor, linkId: number, now: number): Promise<boolean> {
  const row = await db.updateTable('magic_links').set({ consumed_at: now })
    .where('id', '=', linkId).where('consumed_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', now)
    .returning('id').executeTakeFirst();
  return row !== undefined;
}

export async function insertPendingLogin(db: Executor, customerId: number, values: { idHash: string; linkId: number; expiresAt: number }): Promise<void> {
  await db.insertInto('magic_link_pending_logins').values({
    id_hash: values.idHash, link_id: values.linkId, customer_id: customerId, attempts: 0, expires_at: values.expiresAt,
  }).execute();
}

/**
 * Reserves one code attempt of a pending login before the code is checked (so concurrent guesses
 * cannot exceed the budget): the attempt number, or undefined when the login is unknown, expired
 * or out of attempts.
 */
export async function reservePendingAttempt(db: Executor, idHash: string, maxAttempts: number, now: number): Promise<{ linkId: number; customerId: number; attempt: number } | undefined> {
  const row = await db.updateTable('magic_link_pending_logins')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id_hash', '=', idHash).where('attempts', '<', maxAttempts).where('expires_at', '>', now)
    .returning(['link_id', 'customer_id', 'attempts']).executeTakeFirst();
  return row && { linkId: Number(row.link_id), customerId: Number(row.customer_id), attempt: Number(row.attempts) };
}

/** The link of a pending login that may still be finished (attempts left, unexpired); spends no attempt. */
export async function findPendingLogin(db: Executor, idHash: string, maxAttempts: number, now: number): Promise<{ linkId: number; customerId: number } | undefined> {
  const row = await db.selectFrom('magic_link_pending_logins').select(['link_id', 'customer_id'])
    .where('id_hash', '=', idHash).where('attempts', '<', maxAttempts).where('expires_at', '>', now).executeTakeFirst();
  return row && { linkId: Number(row.link_id), customerId: Number(row.customer_id) };
}

/** Ends a pending login; true for the one caller that removed it. */
export async function deletePendingLogin(db: Executor, idHash: string): Promise<boolean> {
  const result = await db.deleteFrom('magic_link_pending_logins').where('id_hash', '=', idHash).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Drops pending logins that can no longer be finished. */
export async function deleteExpiredPendingLogins(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('magic_link_pending_logins').where('expires_at', '<=', now).execute();
}

/** The user's latest links, newest first, whatever their state (the console's list). */
export async function listRecentLinks(db: Executor, customerId: number, userId: number, limit: number): Promise<RecentLink[]> {
  const rows = await db.selectFrom('magic_links')
    .innerJoin('applications', 'applications.id', 'magic_links.application_id')
    .select(['magic_links.id', 'applications.name', 'magic_links.redirect_uri', 'magic_links.created_at', 'magic_links.expires_at',
      'magic_links.consumed_at', 'magic_links.revoked_at'])
    .where('magic_links.customer_id', '=', customerId).where('magic_links.user_id', '=', userId)
    .orderBy('magic_links.created_at', 'desc').orderBy('magic_links.id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    id: Number(r.id), applicationName: r.name, redirectUri: r.redirect_uri, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at),
    consumedAt: r.consumed_at === null ? null : Number(r.consumed_at), revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  }));
}
