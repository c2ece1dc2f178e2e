/**
 * Users queries of bulk import and export, which read many users at once with their password hashes,
 * and the rehash of an imported hash on its first good login.
 */
import type { Executor } from '../../store/db.ts';
import { normalise, toUser } from './repo.ts';
import type { User } from './types.ts';

export interface UserWithHash { user: User; passwordHash: string | null }

/** The users whose usernames are among `usernames` (case-insensitive), with their hashes. */
export async function findUsersByUsernames(db: Executor, customerId: number, usernames: string[]): Promise<UserWithHash[]> {
  if (usernames.length === 0) return [];
  const rows = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('username_norm', 'in', [...new Set(usernames.map(normalise))]).execute();
  return rows.map((row) => ({ user: toUser(row), passwordHash: row.password_hash }));
}

/** Up to `limit` users with ids above `afterId`, in id order: a keyset walk that stays fast at any depth. */
export async function listUsersAfter(db: Executor, customerId: number, afterId: number, limit: number): Promise<UserWithHash[]> {
  const rows = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('id', '>', afterId).orderBy('id').limit(limit).execute();
  return rows.map((row) => ({ user: toUser(row), passwordHash: row.password_hash }));
}

/** How many users listUsersAfter walks through for the customer (every user, as export writes them). */
export async function countAllUsers(db: Executor, customerId: number): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll<string | number>().as('n')).where('customer_id', '=', customerId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Swaps a verified hash for the service's own while it is still `expectedHash`. Not a password change:
 * the credentials version, password date and update date stay.
 */
export async function rehashPassword(db: Executor, customerId: number, userId: number, expectedHash: string, newHash: string): Promise<boolean> {
  const result = await db.updateTable('users').set({ password_hash: newHash })
    .where('customer_id', '=', customerId).where('id', '=', userId).where('password_hash', '=', expectedHash).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
