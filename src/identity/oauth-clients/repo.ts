/** Queries on `oauth_clients`. Scoped by customer, except the lookup that authenticates a client. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { OauthClientsTable } from '../../store/schema.ts';
import type { OauthClient } from './types.ts';

function toClient(row: Selectable<OauthClientsTable>): OauthClient {
  return { id: Number(row.id), customerId: Number(row.customer_id), clientId: row.client_id, name: row.name, createdAt: Number(row.created_at) };
}

export async function insertClient(db: Executor, customerId: number, values: { clientId: string; name: string; secretHash: string; now: number }): Promise<OauthClient> {
  const row = await db.insertInto('oauth_clients').values({
    customer_id: customerId, client_id: values.clientId, name: values.name, secret_hash: values.secretHash, created_at: values.now,
  }).returningAll().executeTakeFirstOrThrow();
  return toClient(row);
}

/** Creation order. */
export async function listClients(db: Executor, customerId: number): Promise<OauthClient[]> {
  return (await db.selectFrom('oauth_clients').selectAll().where('customer_id', '=', customerId).orderBy('id').execute()).map(toClient);
}

/** @returns the client deleted; undefined when there was none. */
export async function deleteClient(db: Executor, customerId: number, clientId: string): Promise<OauthClient | undefined> {
  const row = await db.deleteFrom('oauth_clients').where('customer_id', '=', customerId).where('client_id', '=', clientId).returningAll().executeTakeFirst();
  return row && toClient(row);
}

/**
 * The client and its secret hash, whatever its customer: this is the authentication step that
 * tells which customer the caller is (as customers' findForSignature does for the header scheme).
 */
export async function findClientForAuthentication(db: Executor, clientId: string): Promise<{ customerId: number; secretHash: string } | undefined> {
  const row = await db.selectFrom('oauth_clients').select(['customer_id', 'secret_hash']).where('client_id', '=', clientId).executeTakeFirst();
  return row && { customerId: Number(row.customer_id), secretHash: row.secret_hash };
}
