/** sign_in_flows rows, by the SHA-256 of the flow id. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { SignInFlowsTable } from '../../store/schema.ts';
import type { AuthMethod } from '../sso-sessions/types.ts';
import type { Flow, Step } from './types.ts';

function toFlow(row: Selectable<SignInFlowsTable>): Flow {
  return {
    idHash: row.id_hash,
    customerId: Number(row.customer_id),
    applicationId: Number(row.application_id),
    applicationUuid: row.application_uuid,
    returnTo: row.return_to,
    browserHash: row.browser_hash,
    userId: row.user_id === null ? null : Number(row.user_id),
    login: row.login,
    step: row.step as Step,
    amr: JSON.parse(row.amr) as AuthMethod[],
    linkId: row.link_id === null ? null : Number(row.link_id),
    codeHash: row.code_hash,
    codeAttempts: Number(row.code_attempts),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}

export async function insertFlow(db: Executor, flow: Flow): Promise<void> {
  await db.insertInto('sign_in_flows').values({
    id_hash: flow.idHash,
    customer_id: flow.customerId,
    application_id: flow.applicationId,
    application_uuid: flow.applicationUuid,
    return_to: flow.returnTo,
    browser_hash: flow.browserHash,
    user_id: flow.userId,
    login: flow.login,
    step: flow.step,
    amr: JSON.stringify(flow.amr),
    link_id: flow.linkId,
    code_hash: flow.codeHash,
    code_attempts: flow.codeAttempts,
    created_at: flow.createdAt,
    expires_at: flow.expiresAt,
  }).execute();
}

export async function findFlow(db: Executor, customerId: number, idHash: string): Promise<Flow | undefined> {
  const row = await db.selectFrom('sign_in_flows').selectAll().where('id_hash', '=', idHash).where('customer_id', '=', customerId).executeTakeFirst();
  return row && toFlow(row);
}

export interface FlowChanges {
  userId?: number | null;
  login?: string | null;
  step?: Step;
  amr?: AuthMethod[];
  linkId?: number | null;
  codeHash?: string | null;
}

/**
 * Moves the flow on, only from the step it was read in: of two concurrent posts of one step only one
 * moves it. @returns whether this caller did.
 */
export async function updateFlow(db: Executor, idHash: string, fromStep: Step, changes: FlowChanges): Promise<boolean> {
  const result = await db.updateTable('sign_in_flows').set({
    ...(changes.userId !== undefined ? { user_id: changes.userId } : {}),
    ...(changes.login !== undefined ? { login: changes.login } : {}),
    ...(changes.step !== undefined ? { step: changes.step } : {}),
    ...(changes.amr !== undefined ? { amr: JSON.stringify(changes.amr) } : {}),
    ...(changes.linkId !== undefined ? { link_id: changes.linkId } : {}),
    ...(changes.codeHash !== undefined ? { code_hash: changes.codeHash, code_attempts: 0 } : {}),
  }).where('id_hash', '=', idHash).where('step', '=', fromStep).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Records the LOGIN link mailed for the flow's code (written after the page was answered). */
export async function setFlowLink(db: Executor, idHash: string, linkId: number): Promise<void> {
  await db.updateTable('sign_in_flows').set({ link_id: linkId }).where('id_hash', '=', idHash).where('step', '=', 'magic').execute();
}

/**
 * Reserves one try of the mailed code before it is compared (concurrent guesses share the budget):
 * the try's number, or undefined when none is left.
 */
export async function reserveCodeAttempt(db: Executor, idHash: string, maxAttempts: number): Promise<number | undefined> {
  const row = await db.updateTable('sign_in_flows')
    .set((eb) => ({ code_attempts: eb('code_attempts', '+', 1) }))
    .where('id_hash', '=', idHash).where('step', '=', 'magic').where('code_attempts', '<', maxAttempts)
    .returning('code_attempts').executeTakeFirst();
  return row && Number(row.code_attempts);
}

/** Ends the flow; true for the one caller that did. */
export async function deleteFlow(db: Executor, idHash: string): Promise<boolean> {
  const result = await db.deleteFrom('sign_in_flows').where('id_hash', '=', idHash).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function purgeExpiredFlows(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('sign_in_flows').where('expires_at', '<=', now).execute();
}
