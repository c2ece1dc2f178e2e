/**
 * API token queries. Tokens are found by the SHA-256 of their secret (an indexed equality), never
 * by the secret. The owner's login facts are read with the token in one query: the verifier runs on
 * every request and must see a disabled or deleted user at once.
 */
import type { Executor } from '../../store/db.ts';
import type { ApiToken, ApiTokenType, TokenWithOwner } from './types.ts';

interface TokenRow {
  id: number;
  customer_id: number;
  user_id: number;
  username: string;
  name: string;
  type: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}

const TOKEN_COLUMNS = [
  'api_tokens.id', 'api_tokens.customer_id', 'api_tokens.user_id', 'users.username', 'api_tokens.name',
  'api_tokens.type', 'api_tokens.created_at', 'api_tokens.expires_at', 'api_tokens.last_used_at',
] as const;

function toToken(row: TokenRow): ApiToken {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    userId: Number(row.user_id),
    username: row.username,
    name: row.name,
    type: row.type as ApiTokenType,
    createdAt: Number(row.created_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

/** "Not expired at `now`", as SQL. */
const live = (now: number) => (eb: any) => eb.or([eb('api_tokens.expires_at', 'is', null), eb('api_tokens.expires_at', '>', now)]);

/**
 * Writes the user's quota row (insert or touch). Called first in a create transaction: the write
 * holds the row lock (PostgreSQL) or the database write lock (SQLite) until commit, so concurrent
 * creates of one user count each other's tokens.
 */
export async function lockUserQuota(db: Executor, customerId: number, userId: number, now: number): Promise<void> {
  await db.insertInto('api_token_quotas')
    .values({ user_id: userId, customer_id: customerId, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ updated_at: now }))
    .execute();
}

export async function countLiveTokens(db: Executor, customerId: number, userId: number, now: number): Promise<number> {
  const row = await db.selectFrom('api_tokens')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('customer_id', '=', customerId)
    .where('user_id', '=', userId)
    .where(live(now))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface NewTokenRow {
  userId: number;
  username: string;
  name: string;
  type: ApiTokenType;
  tokenHash: string;
  createdAt: number;
  expiresAt: number | null;
}

export async function insertToken(db: Executor, customerId: number, values: NewTokenRow): Promise<ApiToken> {
  const row = await db.insertInto('api_tokens').values({
    customer_id: customerId,
    user_id: values.userId,
    name: values.name,
    type: values.type,
    token_hash: values.tokenHash,
    created_at: values.createdAt,
    expires_at: values.expiresAt,
    last_used_at: null,
  }).returning(['id', 'customer_id', 'user_id', 'name', 'type', 'created_at', 'expires_at', 'last_used_at'])
    .executeTakeFirstOrThrow();
  return toToken({ ...row, username: values.username });
}

/** The user's tokens, oldest first. */
export async function listTokens(db: Executor, customerId: number, userId: number): Promise<ApiToken[]> {
  const rows = await db.selectFrom('api_tokens')
    .innerJoin('users', 'users.id', 'api_tokens.user_id')
    .select(TOKEN_COLUMNS)
    .where('api_tokens.customer_id', '=', customerId)
    .where('api_tokens.user_id', '=', userId)
    .orderBy('api_tokens.id')
    .execute();
  return rows.map(toToken);
}

export async function findToken(db: Executor, customerId: number, tokenId: number): Promise<ApiToken | undefined> {
  const row = await db.selectFrom('api_tokens')
    .innerJoin('users', 'users.id', 'api_tokens.user_id')
    .select(TOKEN_COLUMNS)
    .where('api_tokens.customer_id', '=', customerId)
    .where('api_tokens.id', '=', tokenId)
    .executeTakeFirst();
  return row && toToken(row);
}

export async function deleteToken(db: Executor, customerId: number, tokenId: number): Promise<boolean> {
  const result = await db.deleteFrom('api_tokens')
    .where('customer_id', '=', customerId)
    .where('id', '=', tokenId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Deletes every token of the user that has expired at `now`: the tokens deleted. */
export async function deleteExpiredTokens(db: Executor, customerId: number, userId: number, now: number): Promise<{ id: number; name: string }[]> {
  const rows = await db.deleteFrom('api_tokens')
    .where('customer_id', '=', customerId)
    .where('user_id', '=', userId)
    .where('expires_at', 'is not', null)
    .where('expires_at', '<=', now)
    .returning(['id', 'name'])
    .execute();
  return rows.map((row) => ({ id: Number(row.id), name: row.name }));
}

/**
 * Deletes up to `limit` tokens (any customer) that expired before `before`; returns how many.
 * Idempotent: nodes running it at once delete disjoint rows or nothing.
 */
export async function purgeExpiredBatch(db: Executor, before: number, limit: number): Promise<number> {
  const result = await db.deleteFrom('api_tokens')
    .where('id', 'in', (eb) => eb.selectFrom('api_tokens')
      .select('id')
      .where('expires_at', 'is not', null)
      .where('expires_at', '<', before)
      .orderBy('expires_at')
      .limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The token whose secret hashes to `tokenHash`, with its owner's login facts. */
export async function findTokenByHash(db: Executor, customerId: number, tokenHash: string): Promise<TokenWithOwner | undefined> {
  const row = await db.selectFrom('api_tokens')
    .innerJoin('users', (join) => join.onRef('users.id', '=', 'api_tokens.user_id').onRef('users.customer_id', '=', 'api_tokens.customer_id'))
    .select([...TOKEN_COLUMNS, 'users.email', 'users.role', 'users.credentials_version', 'users.disabled', 'users.mark_for_deletion'])
    .where('api_tokens.token_hash', '=', tokenHash)
    .where('api_tokens.customer_id', '=', customerId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    token: toToken(row),
    owner: {
      userId: Number(row.user_id),
      username: row.username,
      email: row.email,
      role: row.role,
      credentialsVersion: Number(row.credentials_version),
      isDisabled: row.disabled === 1,
      markForDeletion: row.mark_for_deletion === 1,
    },
  };
}

/** Records a use; a no-op when another request (or node) recorded one within `minIntervalMs`. */
export async function touchToken(db: Executor, customerId: number, tokenId: number, now: number, minIntervalMs: number): Promise<void> {
  await db.updateTable('api_tokens')
    .set({ last_used_at: now })
    .where('customer_id', '=', customerId)
    .where('id', '=', tokenId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - minIntervalMs)]))
    .execute();
}
