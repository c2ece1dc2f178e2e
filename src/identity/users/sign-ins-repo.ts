/**
 * Each user's last sign-in (user_sign_ins): one row per user, kept apart from users so that a sign-in
 * does not change the table the nodes' kept user answers follow.
 */
import type { Executor } from '../../store/db.ts';

/** Records a sign-in at `now`, unless one was recorded less than `minIntervalMs` before (a busy user writes once a minute). */
export async function recordSignIn(db: Executor, customerId: number, userId: number, now: number, minIntervalMs: number): Promise<void> {
  await db.insertInto('user_sign_ins').values({ user_id: userId, customer_id: customerId, signed_in_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ signed_in_at: now })
      .where('user_sign_ins.customer_id', '=', customerId)
      .where('user_sign_ins.signed_in_at', '<=', now - minIntervalMs))
    .execute();
}

export async function findLastSignIn(db: Executor, customerId: number, userId: number): Promise<number | null> {
  const row = await db.selectFrom('user_sign_ins').select('signed_in_at')
    .where('customer_id', '=', customerId).where('user_id', '=', userId).executeTakeFirst();
  return row ? Number(row.signed_in_at) : null;
}
