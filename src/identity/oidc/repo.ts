/**
 * Queries of the OpenID provider module: login tickets, and the customer key of a customer id.
 *
 * Login tickets: how the magic-link landing tells a customer's OpenID provider who just signed in.
 * The landing stores one (single use, short-lived) and hands the browser a random cookie; the
 * provider's interaction consumes it for the application it was issued for. Stored as SHA-256 of
 * the cookie value, in `oidc_models` under a kind of their own (the customer's provider state).
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';

const KIND = 'LatchkeyLoginTicket';
export const TICKET_COOKIE = 'latchkey_login_ticket';
export const TICKET_TTL_SECONDS = 300;

export interface LoginTicket {
  userId: number;
  applicationUuid: string;
  /** Authentication methods of the landing: ['email'], plus 'otp' after a second factor. */
  amr: string[];
}

/** @returns the cookie value (never stored). */
export async function issueTicket(db: Kysely<Database>, customerId: number, ticket: LoginTicket, now: number): Promise<string> {
  const value = randomBytes(32).toString('base64url');
  await db.insertInto('oidc_models').values({
    customer_id: customerId,
    kind: KIND,
    id: sha256Hex(value),
    payload: JSON.stringify(ticket),
    grant_id: null,
    uid: null,
    user_code: null,
    expires_at: now + TICKET_TTL_SECONDS * 1000,
    consumed_at: null,
  }).execute();
  return value;
}

/**
 * The ticket behind `value`, consumed, when it is this customer's, issued for `applicationUuid`,
 * unexpired and unused; otherwise undefined (and a ticket for another application stays usable).
 * Atomic: of two concurrent consumptions one wins.
 */
export async function consumeTicket(db: Kysely<Database>, customerId: number, value: string, applicationUuid: string, now: number): Promise<LoginTicket | undefined> {
  const id = sha256Hex(value);
  const row = await db.selectFrom('oidc_models').select(['payload'])
    .where('customer_id', '=', customerId).where('kind', '=', KIND).where('id', '=', id)
    .where('consumed_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();
  if (!row) return undefined;
  const ticket = JSON.parse(row.payload) as LoginTicket;
  if (ticket.applicationUuid !== applicationUuid) return undefined;
  const result = await db.updateTable('oidc_models').set({ consumed_at: now })
    .where('customer_id', '=', customerId).where('kind', '=', KIND).where('id', '=', id)
    .where('consumed_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1 ? ticket : undefined;
}

/** The customers service looks customers up by key only; the landing knows the id. */
export async function findCustomerKey(db: Kysely<Database>, customerId: number): Promise<string | undefined> {
  const row = await db.selectFrom('customers').select('customer_key').where('id', '=', customerId).executeTakeFirst();
  return row?.customer_key;
}
