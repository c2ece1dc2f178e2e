/** Queries on oauth_access_tokens. The lookup by hash names the customer (the token is the credential). */
import type { Executor } from '../../store/db.ts';
import type { Customer } from '../customers/types.ts';

export async function insertAccessToken(db: Executor, customerId: number, values: {
  tokenHash: string; clientRowId: number; scope: string; expiresAt: number; now: number;
}): Promise<void> {
  await db.insertInto('oauth_access_tokens').values({
    token_hash: values.tokenHash,
    customer_id: customerId,
    client_id: values.clientRowId,
    scope: values.scope,
    expires_at: values.expiresAt,
    created_at: values.now,
  }).execute();
}

/** The oauth_clients row id of a client of this customer (the token row points at it). */
export async function findClientRowId(db: Executor, customerId: number, clientId: string): Promise<number | undefined> {
  const row = await db.selectFrom('oauth_clients').select('id').where('customer_id', '=', customerId).where('client_id', '=', clientId).executeTakeFirst();
  return row && Number(row.id);
}

/** An unexpired token's scope, client and customer (its client still existing: deleting a client ends its tokens). */
export async function findLiveToken(db: Executor, tokenHash: string, now: number): Promise<{ scope: string; clientId: string; customer: Customer } | undefined> {
  const row = await db.selectFrom('oauth_access_tokens')
    .innerJoin('customers', 'customers.id', 'oauth_access_tokens.customer_id')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_access_tokens.client_id')
    .select(['oauth_access_tokens.scope', 'oauth_clients.client_id', 'customers.id', 'customers.customer_key', 'customers.email', 'customers.display_name',
      'customers.password_expiry_days', 'customers.created_at'])
    .where('oauth_access_tokens.token_hash', '=', tokenHash)
    .where('oauth_access_tokens.expires_at', '>', now)
    .executeTakeFirst();
  return row && {
    scope: row.scope,
    clientId: row.client_id,
    customer: {
      id: Number(row.id),
      customerKey: row.customer_key,
      email: row.email,
      displayName: row.display_name,
      passwordExpiryDays: row.password_expiry_days === null ? null : Number(row.password_expiry_days),
      createdAt: Number(row.created_at),
    },
  };
}

export async function deleteExpiredTokens(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('oauth_access_tokens').where('expires_at', '<=', now).execute();
}
