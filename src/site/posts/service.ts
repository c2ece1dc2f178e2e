/**
 * Posts: listing in pages, create with a slug made unique (WordPress appends -2, -3, …), partial
 * update and delete. Posts belong to the site, not to a customer; who may write is the routes' check.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';
import type { Post, PostInput, PostStatus, PostsPage } from './types.ts';

export interface PostsService {
  /** `status` undefined: every status. */
  list(query: { status: PostStatus | undefined; page: number; perPage: number }): Promise<PostsPage>;
  /** @throws NotFound */
  get(id: number): Promise<Post>;
  /** @throws Invalid (no title) */
  create(input: PostInput, authorId: number): Promise<Post>;
  /** Fields left undefined keep their values. @throws NotFound */
  update(id: number, input: PostInput): Promise<Post>;
  /** @throws NotFound */
  remove(id: number): Promise<Post>;
}

export const MAX_SLUG_LENGTH = 190;
const SLUG_ATTEMPTS = 20;

/** "Héllo, World!" → "hello-world". */
export function slugify(text: string): string {
  const slug = text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, MAX_SLUG_LENGTH).replace(/-+$/, '');
  return slug || 'post';
}

export function createPostsService(deps: { db: Kysely<Database>; clock: Clock }): PostsService {
  const { db, clock } = deps;
  const notFound = () => new NotFound('post', 'Post not found.');

  /** Runs `write` with `base`, then base-2, base-3, … while the slug is taken. */
  async function withUniqueSlug<T>(base: string, write: (slug: string) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const suffix = attempt === 1 ? '' : `-${attempt <= SLUG_ATTEMPTS ? attempt : Math.floor(Math.random() * 1e9)}`;
      const slug = base.slice(0, MAX_SLUG_LENGTH - suffix.length) + suffix;
      try {
        return await write(slug);
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= SLUG_ATTEMPTS + 5) throw error;
      }
    }
  }

  return {
    async list({ status, page, perPage }) {
      const [posts, total] = await Promise.all([
        repo.listPosts(db, status, (page - 1) * perPage, perPage),
        repo.countPosts(db, status),
      ]);
      return { posts, total };
    },

    async get(id) {
      const post = await repo.findPost(db, id);
      if (!post) throw notFound();
      return post;
    },

    async create(input, authorId) {
      if (input.title === undefined || input.title.trim() === '') throw new Invalid('title', 'is required');
      const title = input.title;
      return withUniqueSlug(input.slug ?? slugify(title), (slug) => repo.insertPost(db, {
        slug,
        status: input.status ?? 'publish',
        title,
        content: input.content ?? '',
        authorId,
        now: clock.now(),
      }));
    },

    async update(id, input) {
      if (input.title !== undefined && input.title.trim() === '') throw new Invalid('title', 'must not be empty');
      const write = async (slug: string | undefined) => {
        const post = await repo.updatePost(db, id, { ...input, slug, now: clock.now() });
        if (!post) throw notFound();
        return post;
      };
      return input.slug === undefined ? write(undefined) : withUniqueSlug(input.slug, write);
    },

    async remove(id) {
      const post = await repo.deletePost(db, id);
      if (!post) throw notFound();
      return post;
    },
  };
}
