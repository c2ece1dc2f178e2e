/** saml_request_ids (request IDs answered once) and saml_requests (requests waiting for sign-in). */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { SamlRequestsTable } from '../../store/schema.ts';
import type { PendingRequest } from './types.ts';

/** Records the request ID; false when this customer has seen it already (a replay, also a concurrent one). */
export async function recordRequestId(db: Executor, customerId: number, requestId: string, expiresAt: number): Promise<boolean> {
  const row = await db.insertInto('saml_request_ids')
    .values({ customer_id: customerId, request_id: requestId, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['customer_id', 'request_id']).doNothing())
    .returning('request_id')
    .executeTakeFirst();
  return row !== undefined;
}

function toPending(row: Selectable<SamlRequestsTable>): PendingRequest {
  return {
    idHash: row.id_hash,
    customerId: Number(row.customer_id),
    applicationId: Number(row.application_id),
    applicationUuid: row.application_uuid,
    browserHash: row.browser_hash,
    acsUrl: row.acs_url,
    requestId: row.request_id ?? undefined,
    relayState: row.relay_state ?? undefined,
    forceAuthnAfter: row.force_authn_after,
    isPassive: Number(row.is_passive) === 1,
    expiresAt: Number(row.expires_at),
  };
}

export async function insertPending(db: Executor, pending: PendingRequest): Promise<void> {
  await db.insertInto('saml_requests').values({
    id_hash: pending.idHash,
    customer_id: pending.customerId,
    application_id: pending.applicationId,
    application_uuid: pending.applicationUuid,
    browser_hash: pending.browserHash,
    acs_url: pending.acsUrl,
    request_id: pending.requestId ?? null,
    relay_state: pending.relayState ?? null,
    force_authn_after: pending.forceAuthnAfter,
    is_passive: pending.isPassive ? 1 : 0,
    expires_at: pending.expiresAt,
  }).execute();
}

export async function findPending(db: Executor, customerId: number, idHash: string): Promise<PendingRequest | undefined> {
  const row = await db.selectFrom('saml_requests').selectAll().where('id_hash', '=', idHash).where('customer_id', '=', customerId).executeTakeFirst();
  return row && toPending(row);
}

/** @returns whether this call deleted it (of two concurrent answers, one wins). */
export async function deletePending(db: Executor, idHash: string): Promise<boolean> {
  const result = await db.deleteFrom('saml_requests').where('id_hash', '=', idHash).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Expired request IDs and pending requests (the cluster purge). */
export async function purgeExpired(db: Executor, now: number): Promise<{ requestIds: number; pending: number }> {
  const ids = await db.deleteFrom('saml_request_ids').where('expires_at', '<=', now).executeTakeFirst();
  const pending = await db.deleteFrom('saml_requests').where('expires_at', '<=', now).executeTakeFirst();
  return { requestIds: Number(ids.numDeletedRows), pending: Number(pending.numDeletedRows) };
}

/** ForceAuthn: the browser goes to sign in; the answer waits for a session other than `ssoHash`'s. */
export async function armForceAuthn(db: Executor, idHash: string, ssoHash: string): Promise<void> {
  await db.updateTable('saml_requests').set({ force_authn_after: ssoHash }).where('id_hash', '=', idHash).where('force_authn_after', '=', '').execute();
}
