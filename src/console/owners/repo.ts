/** The console owner's credentials on the customers row: password hash and authenticator. */
import type { Executor } from '../../store/db.ts';

export interface OwnerRow {
  customerId: number;
  customerKey: string;
  email: string;
  displayName: string;
  passwordHash: string | null;
  totpSealed: string | null;
  totpPendingSealed: string | null;
  totpLastStep: number | null;
}

const COLUMNS = [
  'id', 'customer_key', 'email', 'display_name', 'password_hash', 'console_totp_sealed', 'console_totp_pending_sealed', 'console_totp_last_step',
] as const;

function toOwner(row: {
  id: number; customer_key: string; email: string; display_name: string; password_hash: string | null;
  console_totp_sealed: string | null; console_totp_pending_sealed: string | null; console_totp_last_step: number | null;
}): OwnerRow {
  return {
    customerId: Number(row.id),
    customerKey: row.customer_key,
    email: row.email,
    displayName: row.display_name,
    passwordHash: row.password_hash,
    totpSealed: row.console_totp_sealed,
    totpPendingSealed: row.console_totp_pending_sealed,
    totpLastStep: row.console_totp_last_step === null ? null : Number(row.console_totp_last_step),
  };
}

export async function findOwnerByEmail(db: Executor, email: string): Promise<OwnerRow | undefined> {
  const row = await db.selectFrom('customers').select(COLUMNS).where('email', '=', email).executeTakeFirst();
  return row && toOwner(row);
}

export async function findOwnerById(db: Executor, customerId: number): Promise<OwnerRow | undefined> {
  const row = await db.selectFrom('customers').select(COLUMNS).where('id', '=', customerId).executeTakeFirst();
  return row && toOwner(row);
}

export async function findOwnerByKey(db: Executor, customerKey: string): Promise<OwnerRow | undefined> {
  const row = await db.selectFrom('customers').select(COLUMNS).where('customer_key', '=', customerKey).executeTakeFirst();
  return row && toOwner(row);
}

export async function setPasswordHash(db: Executor, customerId: number, hash: string, now: number): Promise<void> {
  await db.updateTable('customers').set({ password_hash: hash, updated_at: now }).where('id', '=', customerId).execute();
}

export async function setPendingTotp(db: Executor, customerId: number, sealed: string | null, now: number): Promise<void> {
  await db.updateTable('customers').set({ console_totp_pending_sealed: sealed, updated_at: now }).where('id', '=', customerId).execute();
}

/** The pending secret becomes the active one, with the step of the code that proved it. */
export async function activatePendingTotp(db: Executor, customerId: number, sealed: string, step: number, now: number): Promise<boolean> {
  const result = await db.updateTable('customers')
    .set({ console_totp_sealed: sealed, console_totp_pending_sealed: null, console_totp_last_step: step, updated_at: now })
    .where('id', '=', customerId).where('console_totp_pending_sealed', '=', sealed)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function removeTotp(db: Executor, customerId: number, now: number): Promise<void> {
  await db.updateTable('customers')
    .set({ console_totp_sealed: null, console_totp_pending_sealed: null, console_totp_last_step: null, updated_at: now })
    .where('id', '=', customerId).execute();
}

/**
 * Records `step` as used when it is later than the last one, in one statement: of two requests with
 * the same code only one moves it. @returns false for a replayed (or older) code.
 */
export async function useTotpStep(db: Executor, customerId: number, step: number): Promise<boolean> {
  const result = await db.updateTable('customers').set({ console_totp_last_step: step })
    .where('id', '=', customerId)
    .where((eb) => eb.or([eb('console_totp_last_step', 'is', null), eb('console_totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
