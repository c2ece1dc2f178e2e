/** Posts queries. Listing order: newest first (created_at, then id), as WordPress lists posts. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { SitePostsTable } from '../../store/schema.ts';
import type { Post, PostStatus } from './types.ts';

function toPost(row: Selectable<SitePostsTable>): Post {
  return {
    id: row.id,
    slug: row.slug,
    status: row.status as PostStatus,
    type: row.type,
    title: row.title,
    content: row.content,
    authorId: row.author_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** `status` undefined: every status. */
export async function listPosts(db: Executor, status: PostStatus | undefined, offset: number, limit: number): Promise<Post[]> {
  let query = db.selectFrom('site_posts').selectAll();
  if (status) query = query.where('status', '=', status);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  return rows.map(toPost);
}

export async function countPosts(db: Executor, status: PostStatus | undefined): Promise<number> {
  let query = db.selectFrom('site_posts').select((eb) => eb.fn.countAll<number>().as('n'));
  if (status) query = query.where('status', '=', status);
  return Number((await query.executeTakeFirst())?.n ?? 0);
}

export async function findPost(db: Executor, id: number): Promise<Post | undefined> {
  const row = await db.selectFrom('site_posts').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toPost(row);
}

export async function insertPost(db: Executor, values: { slug: string; status: PostStatus; title: string; content: string; authorId: number; now: number }): Promise<Post> {
  const row = await db.insertInto('site_posts').values({
    slug: values.slug,
    status: values.status,
    type: 'post',
    title: values.title,
    content: values.content,
    author_id: values.authorId,
    created_at: values.now,
    updated_at: values.now,
  }).returningAll().executeTakeFirstOrThrow();
  return toPost(row);
}

export async function updatePost(db: Executor, id: number, changes: { slug?: string; status?: PostStatus; title?: string; content?: string; now: number }): Promise<Post | undefined> {
  const row = await db.updateTable('site_posts').set({
    ...(changes.slug !== undefined ? { slug: changes.slug } : {}),
    ...(changes.status !== undefined ? { status: changes.status } : {}),
    ...(changes.title !== undefined ? { title: changes.title } : {}),
    ...(changes.content !== undefined ? { content: changes.content } : {}),
    updated_at: changes.now,
  }).where('id', '=', id).returningAll().executeTakeFirst();
  return row && toPost(row);
}

export async function deletePost(db: Executor, id: number): Promise<Post | undefined> {
  const row = await db.deleteFrom('site_posts').where('id', '=', id).returningAll().executeTakeFirst();
  return row && toPost(row);
}
