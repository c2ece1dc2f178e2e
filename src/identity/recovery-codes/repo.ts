/** recovery_codes rows: a user's set, replaced whole, each row deleted by its one use. */
import type { Executor } from '../../store/db.ts';

export async function deleteUserCodes(db: Executor, customerId: number, userId: number): Promise<void> {
  await db.deleteFrom('recovery_codes').where('customer_id', '=', customerId).where('user_id', '=', userId).execute();
}

export async function insertCodes(db: Executor, customerId: number, userId: number, hashes: string[], now: number): Promise<void> {
  await db.insertInto('recovery_codes')
    .values(hashes.map((codeHash, slot) => ({ customer_id: customerId, user_id: userId, slot, code_hash: codeHash, created_at: now })))
    .execute();
}

/** @returns whether this call removed the code (of two concurrent uses, exactly one does). */
export async function deleteCode(db: Executor, customerId: number, userId: number, codeHash: string): Promise<boolean> {
  const result = await db.deleteFrom('recovery_codes')
    .where('customer_id', '=', customerId).where('user_id', '=', userId).where('code_hash', '=', codeHash)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function countUserCodes(db: Executor, customerId: number, userId: number): Promise<number> {
  const row = await db.selectFrom('recovery_codes').select((eb) => eb.fn.countAll().as('n'))
    .where('customer_id', '=', customerId).where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
