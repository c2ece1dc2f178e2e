/**
 * Authenticator queries. Every state change is one conditional UPDATE checked by its affected rows,
 * so concurrent validations, logins and failures cannot both win or lose a count, on either database.
 */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { MfaAuthenticatorsTable } from '../../store/schema.ts';
import type { Authenticator } from './types.ts';

function toAuthenticator(row: Selectable<MfaAuthenticatorsTable>): Authenticator {
  return {
    customerId: row.customer_id,
    userId: row.user_id,
    pendingSecretSealed: row.pending_secret_sealed,
    pendingCreatedAt: row.pending_created_at,
    failedAttempts: row.failed_attempts,
    activeSecretSealed: row.active_secret_sealed,
    activatedAt: row.activated_at,
    lastStep: row.last_step,
  };
}

/** True when `error` is a foreign-key violation (the user was deleted meanwhile), on either database. */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

export async function findAuthenticator(db: Executor, customerId: number, userId: number): Promise<Authenticator | undefined> {
  const row = await db.selectFrom('mfa_authenticators').selectAll()
    .where('customer_id', '=', customerId).where('user_id', '=', userId).executeTakeFirst();
  return row && toAuthenticator(row);
}

/** Starts (or restarts) a registration: a new pending secret with a fresh failure count; the active one stays. */
export async function savePending(db: Executor, customerId: number, userId: number, sealed: string, now: number): Promise<void> {
  await db.insertInto('mfa_authenticators').values({
    user_id: userId,
    customer_id: customerId,
    pending_secret_sealed: sealed,
    pending_created_at: now,
    failed_attempts: 0,
    created_at: now,
    updated_at: now,
  }).onConflict((oc) => oc.column('user_id').doUpdateSet({
    pending_secret_sealed: sealed,
    pending_created_at: now,
    failed_attempts: 0,
    updated_at: now,
  }).where('mfa_authenticators.customer_id', '=', customerId)).execute();
}

/**
 * Reserves one validation attempt of the pending registration `pendingSealed` before its code is
 * checked: one conditional increment, so of concurrent attempts on any node at most `max` get a place.
 * A failed check keeps it (it is the recorded failure); a successful one resets the count on activation.
 * @returns the count with this attempt, or undefined when the registration is locked or was replaced.
 */
export async function reserveAttempt(db: Executor, customerId: number, userId: number, pendingSealed: string, max: number, now: number): Promise<number | undefined> {
  const row = await db.updateTable('mfa_authenticators')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1), updated_at: now }))
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .where('pending_secret_sealed', '=', pendingSealed)
    .where('failed_attempts', '<', max)
    .returning('failed_attempts')
    .executeTakeFirst();
  return row?.failed_attempts;
}

/**
 * Makes the pending registration `pendingSealed` the active secret, with `step` as its last accepted
 * step. Only one caller can consume a given pending registration. The caller's own reservation is in
 * the count (hence at most `max`). @returns false when another did, or it was replaced or removed meanwhile.
 */
export async function activatePending(db: Executor, customerId: number, userId: number, pendingSealed: string, step: number, max: number, now: number): Promise<boolean> {
  const result = await db.updateTable('mfa_authenticators')
    .set((eb) => ({
      active_secret_sealed: eb.ref('pending_secret_sealed'),
      activated_at: now,
      last_step: step,
      pending_secret_sealed: null,
      pending_created_at: null,
      failed_attempts: 0,
      updated_at: now,
    }))
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .where('pending_secret_sealed', '=', pendingSealed)
    .where('failed_attempts', '<=', max)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Records `step` as used for the active secret `activeSealed` when it is later than the last one
 * (RFC 6238 §5.2: a code is accepted once). @returns false when it is not, or the secret changed.
 */
export async function acceptStep(db: Executor, customerId: number, userId: number, activeSealed: string, step: number, now: number): Promise<boolean> {
  const result = await db.updateTable('mfa_authenticators')
    .set({ last_step: step, updated_at: now })
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .where('active_secret_sealed', '=', activeSealed)
    .where('last_step', '<', step)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Removes the pending and the active secret. @returns false when there was nothing to remove. */
export async function deleteAuthenticator(db: Executor, customerId: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('mfa_authenticators')
    .where('customer_id', '=', customerId).where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
