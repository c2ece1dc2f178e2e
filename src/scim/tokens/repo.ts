/** Queries on `scim_tokens`. Every read but the lookup by hash is scoped by customer. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { ScimTokensTable } from '../../store/schema.ts';
import type { ScimToken } from './types.ts';

function toScimToken(row: Pick<Selectable<ScimTokensTable>, 'id' | 'customer_id' | 'token_id' | 'name' | 'created_at' | 'last_used_at'>): ScimToken {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    tokenId: row.token_id,
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

const COLUMNS = ['id', 'customer_id', 'token_id', 'name', 'created_at', 'last_used_at'] as const;

export async function insertScimToken(db: Executor, customerId: number, values: { tokenId: string; name: string; tokenHash: string; now: number }): Promise<ScimToken> {
  const row = await db.insertInto('scim_tokens').values({
    customer_id: customerId, token_id: values.tokenId, name: values.name, token_hash: values.tokenHash, created_at: values.now, last_used_at: null,
  }).returning(COLUMNS).executeTakeFirstOrThrow();
  return toScimToken(row);
}

/** Creation order. */
export async function listScimTokens(db: Executor, customerId: number): Promise<ScimToken[]> {
  return (await db.selectFrom('scim_tokens').select(COLUMNS).where('customer_id', '=', customerId).orderBy('id').execute()).map(toScimToken);
}

export async function findScimToken(db: Executor, customerId: number, tokenId: string): Promise<ScimToken | undefined> {
  const row = await db.selectFrom('scim_tokens').select(COLUMNS).where('customer_id', '=', customerId).where('token_id', '=', tokenId).executeTakeFirst();
  return row && toScimToken(row);
}

/** The token whose secret hashes to `tokenHash`, any customer: the request's tenant is the token's. */
export async function findScimTokenByHash(db: Executor, tokenHash: string): Promise<ScimToken | undefined> {
  const row = await db.selectFrom('scim_tokens').select(COLUMNS).where('token_hash', '=', tokenHash).executeTakeFirst();
  return row && toScimToken(row);
}

export async function deleteScimToken(db: Executor, customerId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('scim_tokens').where('customer_id', '=', customerId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function touchScimToken(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('scim_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
}
