/**
 * Read-only listings the console needs and the services do not offer: users by username or e-mail
 * prefix, and one group's members. Keyset paging on unique indexed columns ((customer_id,
 * username_norm), (customer_id, email_norm), (customer_id, id)), so page 1,000 of a million users
 * costs what page 1 does: no OFFSET.
 */
import type { Executor } from '../store/db.ts';

export interface UserLine {
  id: number;
  username: string;
  email: string;
  name: string;
  isDisabled: boolean;
}

export type SearchMode = 'all' | 'username' | 'email';

export interface UserPage {
  users: UserLine[];
  /** The cursor of the next page, when there is one. */
  next?: string;
}

// Sorts after every character a name can hold: [prefix, prefix + HIGH) is "starts with prefix" as an index range.
const HIGH = '\u{10FFFF}';

export async function searchUsers(db: Executor, customerId: number, mode: SearchMode, prefix: string, after: string, limit: number): Promise<UserPage> {
  const column = mode === 'email' ? 'email_norm' : 'username_norm';
  let q = db.selectFrom('users')
    .select(['id', 'username', 'email', 'first_name', 'last_name', 'disabled', 'username_norm', 'email_norm'])
    .where('customer_id', '=', customerId)
    .where('mark_for_deletion', '=', 0);
  if (mode === 'all') {
    const afterId = /^[0-9]{1,15}$/.test(after) ? Number(after) : 0;
    q = q.where('id', '>', afterId).orderBy('id');
  } else {
    const norm = prefix.trim().toLowerCase();
    q = q.where(column, '>=', norm).where(column, '<', norm + HIGH);
    if (after) q = q.where(column, '>', after);
    q = q.orderBy(column);
  }
  const rows = await q.limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    users: page.map((r) => ({
      id: Number(r.id), username: r.username, email: r.email,
      name: [r.first_name, r.last_name].filter(Boolean).join(' '), isDisabled: r.disabled === 1,
    })),
    next: rows.length > limit && last ? (mode === 'all' ? String(last.id) : mode === 'email' ? last.email_norm : last.username_norm) : undefined,
  };
}

/** One group's members by e-mail, keyset on the membership id. */
export async function groupMembers(db: Executor, customerId: number, groupId: number, afterId: number, limit: number): Promise<{ members: UserLine[]; next?: number }> {
  const rows = await db.selectFrom('group_members')
    .innerJoin('users', 'users.id', 'group_members.user_id')
    .select(['group_members.id as mid', 'users.id', 'users.username', 'users.email', 'users.first_name', 'users.last_name', 'users.disabled'])
    .where('group_members.customer_id', '=', customerId)
    .where('group_members.group_id', '=', groupId)
    .where('group_members.id', '>', afterId)
    .orderBy('group_members.id')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  return {
    members: page.map((r) => ({ id: Number(r.id), username: r.username, email: r.email, name: [r.first_name, r.last_name].filter(Boolean).join(' '), isDisabled: r.disabled === 1 })),
    next: rows.length > limit ? Number(page[page.length - 1]!.mid) : undefined,
  };
}
