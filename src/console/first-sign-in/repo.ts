/** console_first_sign_ins rows, by the SHA-256 of the link's token. */
import type { Executor } from '../../store/db.ts';

export interface FirstSignInRow {
  customerId: number;
  expiresAt: number;
  usedAt: number | null;
}

export async function insertLink(db: Executor, row: { tokenHash: string; customerId: number; createdAt: number; expiresAt: number }): Promise<void> {
  await db.insertInto('console_first_sign_ins').values({
    token_hash: row.tokenHash, customer_id: row.customerId, created_at: row.createdAt, expires_at: row.expiresAt,
  }).execute();
}

export async function findLink(db: Executor, tokenHash: string): Promise<FirstSignInRow | undefined> {
  const row = await db.selectFrom('console_first_sign_ins').select(['customer_id', 'expires_at', 'used_at'])
    .where('token_hash', '=', tokenHash).executeTakeFirst();
  return row && {
    customerId: Number(row.customer_id),
    expiresAt: Number(row.expires_at),
    usedAt: row.used_at === null ? null : Number(row.used_at),
  };
}

/**
 * Marks the link used when it is unused and unexpired, in one statement: of concurrent requests
 * with the same link exactly one gets the customer id back.
 */
export async function consumeLink(db: Executor, tokenHash: string, now: number): Promise<number | undefined> {
  const row = await db.updateTable('console_first_sign_ins').set({ used_at: now })
    .where('token_hash', '=', tokenHash).where('used_at', 'is', null).where('expires_at', '>', now)
    .returning('customer_id').executeTakeFirst();
  return row && Number(row.customer_id);
}

/** Links that ended (used or expired) before `before`: a page saying why is no longer useful. */
export async function purgeEnded(db: Executor, before: number): Promise<void> {
  await db.deleteFrom('console_first_sign_ins').where('expires_at', '<', before).execute();
}
