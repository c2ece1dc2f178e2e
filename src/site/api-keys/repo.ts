/** Site API key queries. Keys are found by the SHA-256 of the presented secret, never by the secret. */
import type { Kysely } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { SiteUser } from '../protect/principal.ts';
import type { SiteApiKey } from './types.ts';

const columns = [
  'site_api_keys.id', 'site_api_keys.customer_id', 'site_api_keys.user_id', 'site_api_keys.name',
  'site_api_keys.created_at', 'site_api_keys.expires_at', 'site_api_keys.revoked_at', 'users.username',
] as const;

interface KeyRow {
  id: number;
  customer_id: number;
  user_id: number | null;
  name: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  username: string | null;
}

function toKey(row: KeyRow): SiteApiKey {
  return {
    id: row.id,
    customerId: row.customer_id,
    userId: row.user_id,
    username: row.user_id === null ? null : row.username,
    name: row.name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

export async function insertKey(db: Executor, customerId: number, values: { userId: number | null; name: string; keyHash: string; expiresAt: number | null; now: number }): Promise<number> {
  const row = await db.insertInto('site_api_keys').values({
    customer_id: customerId,
    user_id: values.userId,
    name: values.name,
    key_hash: values.keyHash,
    created_at: values.now,
    expires_at: values.expiresAt,
    revoked_at: null,
  }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function findKey(db: Executor, customerId: number, keyId: number): Promise<SiteApiKey | undefined> {
  const row = await db.selectFrom('site_api_keys')
    .leftJoin('users', 'users.id', 'site_api_keys.user_id')
    .select(columns)
    .where('site_api_keys.customer_id', '=', customerId).where('site_api_keys.id', '=', keyId)
    .executeTakeFirst();
  return row && toKey(row);
}

/** Keys in creation order; `userId` narrows to one user's keys, null to the default keys. */
export async function listKeys(db: Executor, customerId: number, userId?: number | null): Promise<SiteApiKey[]> {
  let query = db.selectFrom('site_api_keys')
    .leftJoin('users', 'users.id', 'site_api_keys.user_id')
    .select(columns)
    .where('site_api_keys.customer_id', '=', customerId);
  if (userId === null) query = query.where('site_api_keys.user_id', 'is', null);
  else if (userId !== undefined) query = query.where('site_api_keys.user_id', '=', userId);
  const rows = await query.orderBy('site_api_keys.id').limit(10_000).execute();
  return rows.map(toKey);
}

/** Marks the key revoked (once); false when it does not exist or was revoked already. */
export async function revokeKey(db: Executor, customerId: number, keyId: number, now: number): Promise<boolean> {
  const result = await db.updateTable('site_api_keys').set({ revoked_at: now })
    .where('customer_id', '=', customerId).where('id', '=', keyId).where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Revokes the live default key when it has expired, so a new default key can be made. */
export async function revokeExpiredDefaultKey(db: Executor, customerId: number, now: number): Promise<void> {
  await db.updateTable('site_api_keys').set({ revoked_at: now })
    .where('customer_id', '=', customerId).where('user_id', 'is', null).where('revoked_at', 'is', null)
    .where('expires_at', 'is not', null).where('expires_at', '<=', now)
    .execute();
}

export interface LiveKey {
  id: number;
  expiresAt: number | null;
  user: SiteUser | null;
  /** The key names a user that no longer exists. */
  orphaned: boolean;
}

/**
 * Prepares the lookup of an unrevoked key by hash with its user's current state: one query, joining
 * the users table directly because this runs on every request.
 */
export function prepareLiveKeyLookup(db: Kysely<Database>): (customerId: number, keyHash: string) => Promise<LiveKey | undefined> {
  return async (customerId, keyHash) => {
    const row = await db.selectFrom('site_api_keys')
      .leftJoin('users', (join) => join.onRef('users.id', '=', 'site_api_keys.user_id').onRef('users.customer_id', '=', 'site_api_keys.customer_id'))
      .select([
        'site_api_keys.id', 'site_api_keys.user_id', 'site_api_keys.expires_at',
        'users.id as uid', 'users.username', 'users.email', 'users.role', 'users.disabled',
        'users.mark_for_deletion', 'users.credentials_version',
      ])
      .where('site_api_keys.key_hash', '=', keyHash)
      .where('site_api_keys.customer_id', '=', customerId)
      .where('site_api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    if (row.user_id === null) return { id: row.id, expiresAt: row.expires_at, user: null, orphaned: false };
    if (row.uid === null) return { id: row.id, expiresAt: row.expires_at, user: null, orphaned: true };
    return {
      id: row.id,
      expiresAt: row.expires_at,
      orphaned: false,
      user: {
        id: row.uid,
        username: row.username ?? '',
        email: row.email ?? '',
        role: (row.role ?? '').toUpperCase(),
        isActive: row.disabled === 0 && row.mark_for_deletion === 0,
        credentialsVersion: row.credentials_version ?? 0,
      },
    };
  };
}
