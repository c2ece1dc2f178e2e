/**
 * Users by username or e-mail prefix (the console's search; users.search). Keyset paging on unique
 * indexed columns ((customer_id, username_norm), (customer_id, email_norm), (customer_id, id)), so
 * page 1,000 of a million users costs what page 1 does: no OFFSET.
 */
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { countUsers } from './repo.ts';
import type { Executor } from '../../store/db.ts';
import type { SearchMode, UserLine, UserPage } from './types.ts';

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

export type UserSort = 'username' | 'created' | 'lastSignIn';

/** `%` `_` and `\` stand for themselves in the pattern (ESCAPE '\'). */
const likeLiteral = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * A numbered page of the customer's users whose username, e-mail, first or last name contains `text`
 * (any case), sorted, with the number of matches. A substring matches inside the text, so no index
 * serves it: one scan of this customer's users (never another's), which the console can afford;
 * the page itself is bounded by `limit`.
 */
export async function findUsersContaining(db: Executor, customerId: number, query: { text: string; sort: UserSort; offset: number; limit: number }): Promise<{ users: UserLine[]; total: number }> {
  const norm = query.text.trim().toLowerCase();
  const pattern = `%${likeLiteral(norm)}%`;
  // The customer's live users holding the text, as one condition for the count and for the page.
  const matching = (eb: ExpressionBuilder<Database, 'users'>) => eb.and([
    eb('users.customer_id', '=', customerId),
    eb('users.mark_for_deletion', '=', 0),
    ...(norm ? [eb.or([
      sql<boolean>`users.username_norm like ${pattern} escape '\\'`,
      sql<boolean>`users.email_norm like ${pattern} escape '\\'`,
      // The full name holds the first and the last: "hopp", "grace" and "grace hopper" all find Grace Hopper.
      sql<boolean>`lower(users.first_name || ' ' || users.last_name) like ${pattern} escape '\\'`,
    ])] : []),
  ]);
  // Without a text, the per-block counts give the total without reading every row.
  const total = norm
    ? Number((await db.selectFrom('users').where(matching).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n ?? 0)
    : await countUsers(db, customerId);
  const base = db.selectFrom('users').leftJoin('user_sign_ins', 'user_sign_ins.user_id', 'users.id').where(matching);
  let rows = base.select(['users.id', 'users.username', 'users.email', 'users.first_name', 'users.last_name', 'users.disabled',
    'users.created_at', 'user_sign_ins.signed_in_at']);
  // Newest first is by id: ids grow with creation (created_at is the insert's time), and (customer_id, id)
  // is indexed. Users never signed in share a last sign-in: the username orders them, so pages never overlap.
  if (query.sort === 'created') rows = rows.orderBy('users.id', 'desc');
  else if (query.sort === 'lastSignIn') rows = rows.orderBy(sql`coalesce(user_sign_ins.signed_in_at, 0)`, 'desc').orderBy('users.username_norm');
  else rows = rows.orderBy('users.username_norm');
  const found = await rows.limit(query.limit).offset(query.offset).execute();
  return {
    total,
    users: found.map((r) => ({
      id: Number(r.id), username: r.username, email: r.email,
      name: [r.first_name, r.last_name].filter(Boolean).join(' '), isDisabled: r.disabled === 1,
      createdAt: Number(r.created_at), lastSignInAt: r.signed_in_at === null ? null : Number(r.signed_in_at),
    })),
  };
}
