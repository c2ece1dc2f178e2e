/** password_resets rows, found by the SHA-256 of the link's token. */
import type { Executor } from '../../store/db.ts';
import type { PasswordReset } from './types.ts';

interface ResetRow {
  id: number | string;
  customer_id: number | string;
  user_id: number | string;
  created_at: number | string;
  expires_at: number | string;
  used_at: number | string | null;
}

function toReset(row: ResetRow): PasswordReset {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    userId: Number(row.user_id),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    usedAt: row.used_at === null ? null : Number(row.used_at),
  };
}

export async function insertReset(db: Executor, tokenHash: string, reset: Omit<PasswordReset, 'id' | 'usedAt'>): Promise<void> {
  await db.insertInto('password_resets').values({
    token_hash: tokenHash,
    customer_id: reset.customerId,
    user_id: reset.userId,
    created_at: reset.createdAt,
    expires_at: reset.expiresAt,
    used_at: null,
  }).execute();
}

export async function findReset(db: Executor, customerId: number, tokenHash: string): Promise<PasswordReset | undefined> {
  const row = await db.selectFrom('password_resets')
    .select(['id', 'customer_id', 'user_id', 'created_at', 'expires_at', 'used_at'])
    .where('token_hash', '=', tokenHash).where('customer_id', '=', customerId)
    .executeTakeFirst();
  return row && toReset(row);
}

/** Uses the reset if it is still open at `now`. @returns whether this call did (of concurrent calls, one does). */
export async function useReset(db: Executor, id: number, now: number): Promise<boolean> {
  const result = await db.updateTable('password_resets').set({ used_at: now })
    .where('id', '=', id).where('used_at', 'is', null).where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives back a use that could not be completed (the password was not stored). */
export async function releaseReset(db: Executor, id: number, usedAt: number): Promise<void> {
  await db.updateTable('password_resets').set({ used_at: null }).where('id', '=', id).where('used_at', '=', usedAt).execute();
}

/** Ends the user's other open resets: once a password is set, an older mail's link must not set another. */
export async function useOpenResets(db: Executor, customerId: number, userId: number, now: number): Promise<void> {
  await db.updateTable('password_resets').set({ used_at: now })
    .where('customer_id', '=', customerId).where('user_id', '=', userId).where('used_at', 'is', null)
    .execute();
}

/** Deletes resets expired before `before` (a used one expires too: 30 minutes after it was made). */
export async function deleteResetsExpiredBefore(db: Executor, before: number): Promise<number> {
  const result = await db.deleteFrom('password_resets').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
