/**
 * The posts API (WordPress REST shapes, spec "Post"): list, read, create, update, delete. Readers
 * read published posts; editors (capability canWrite) write and see drafts. The listing is served
 * from a short per-node cache of its serialised JSON, so a read costs only the credential check.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { Forbidden, Invalid, NotFound } from '../../lib/errors.ts';
import type { PostsService } from './service.ts';
import { MAX_SLUG_LENGTH } from './service.ts';
import type { Post, PostInput, PostStatus } from './types.ts';

export const POSTS_PATH = '/cms-json/cms/v2/posts';
export const MAX_PER_PAGE = 100;
export const DEFAULT_PER_PAGE = 10;
const MAX_CACHED_PAGES = 256;

export interface PostsRoutesOptions {
  posts: PostsService;
  /** Base of `link` and `guid.rendered`. */
  siteUrl: string;
  clock: Clock;
  /** How long a listing page is served from memory; 0 disables the cache. */
  cacheMs: number;
}

/** WordPress's date format (site time zone UTC): `YYYY-MM-DDTHH:MM:SS`. */
const wpDate = (ms: number): string => new Date(ms).toISOString().slice(0, 19);

export function toWirePost(post: Post, siteUrl: string) {
  return {
    id: post.id,
    date: wpDate(post.createdAt),
    date_gmt: wpDate(post.createdAt),
    guid: { rendered: `${siteUrl}/?p=${post.id}` },
    modified: wpDate(post.updatedAt),
    modified_gmt: wpDate(post.updatedAt),
    slug: post.slug,
    status: post.status,
    type: post.type,
    link: `${siteUrl}/${post.slug}/`,
    title: { rendered: post.title },
    // Password-protected posts are not a feature of this site: always false.
    content: { rendered: post.content, protected: false },
    author: post.authorId,
  };
}

const rendered = { type: 'object', properties: { rendered: { type: 'string' } } } as const;
const postSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    date: { type: 'string' },
    date_gmt: { type: 'string' },
    guid: rendered,
    modified: { type: 'string' },
    modified_gmt: { type: 'string' },
    slug: { type: 'string' },
    status: { type: 'string' },
    type: { type: 'string' },
    link: { type: 'string' },
    title: rendered,
    content: { type: 'object', properties: { rendered: { type: 'string' }, protected: { type: 'boolean' } } },
    author: { type: 'integer' },
  },
} as const;

// Titles are one line; content is HTML and may hold tabs and line breaks, no other control characters.
const titleSchema = { type: 'string', minLength: 1, maxLength: 500, pattern: '^[^\\u0000-\\u001f\\u007f]*$' } as const;
const contentSchema = { type: 'string', maxLength: 100_000, pattern: '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$' } as const;
const slugSchema = { type: 'string', minLength: 1, maxLength: MAX_SLUG_LENGTH, pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' } as const;
const statusSchema = { type: 'string', enum: ['publish', 'draft'] } as const;

const createBody = {
  type: 'object',
  required: ['title'],
  properties: { title: titleSchema, content: contentSchema, slug: slugSchema, status: statusSchema },
} as const;
const updateBody = {
  type: 'object',
  properties: { title: titleSchema, content: contentSchema, slug: slugSchema, status: statusSchema },
} as const;

const listQuery = {
  type: 'object',
  properties: {
    page: { type: 'string', pattern: '^[1-9][0-9]{0,5}$' },
    per_page: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' },
    status: { type: 'string', enum: ['publish', 'draft', 'any'] },
  },
} as const;

/** A listing page as it is sent: encoded once, not on every write of a string. */
interface CachedPage { until: number; body: Buffer; total: number }

async function requireWriter(request: FastifyRequest): Promise<void> {
  const capabilities = await request.principal.capabilities();
  if (!capabilities.canWrite) throw new Forbidden('write', 'These credentials may not change posts.');
}

function parseId(raw: string): number {
  if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new NotFound('post', 'Post not found.');
  return Number(raw);
}

export async function postsRoutes(app: FastifyInstance, opts: PostsRoutesOptions): Promise<void> {
  const { posts, siteUrl, clock, cacheMs } = opts;
  const cache = new Map<string, CachedPage>();
  const wire = (post: Post) => toWirePost(post, siteUrl);
  const writer = { onRequest: requireWriter };

  app.get<{ Querystring: { page?: string; per_page?: string; status?: 'publish' | 'draft' | 'any' } }>(POSTS_PATH, {
    schema: { querystring: listQuery, response: { 200: { type: 'array', items: postSchema } } },
  }, async (request, reply) => {
    const page = Number(request.query.page ?? 1);
    const perPage = Number(request.query.per_page ?? DEFAULT_PER_PAGE);
    if (perPage > MAX_PER_PAGE) throw new Invalid('per_page', `must be at most ${MAX_PER_PAGE}`);
    const wanted = request.query.status ?? 'publish';
    if (wanted !== 'publish') await requireWriter(request);
    const status: PostStatus | undefined = wanted === 'any' ? undefined : wanted;

    const key = `${wanted}:${page}:${perPage}`;
    const now = clock.now();
    let hit = cacheMs > 0 ? cache.get(key) : undefined;
    if (!hit || hit.until <= now) {
      const result = await posts.list({ status, page, perPage });
      hit = { until: now + cacheMs, body: Buffer.from(JSON.stringify(result.posts.map(wire))), total: result.total };
      if (cacheMs > 0) {
        if (cache.size >= MAX_CACHED_PAGES) cache.clear();
        cache.set(key, hit);
      }
    }
    // WordPress's paging headers.
    reply.header('x-wp-total', String(hit.total));
    reply.header('x-wp-totalpages', String(Math.ceil(hit.total / perPage)));
    return reply.type('application/json; charset=utf-8').send(hit.body);
  });

  app.get<{ Params: { id: string } }>(`${POSTS_PATH}/:id`, {
    schema: { response: { 200: postSchema } },
  }, async (request) => {
    const post = await posts.get(parseId(request.params.id));
    if (post.status !== 'publish' && !(await request.principal.capabilities()).canWrite) {
      throw new NotFound('post', 'Post not found.');
    }
    return wire(post);
  });

  app.post<{ Body: PostInput }>(POSTS_PATH, {
    ...writer,
    schema: { body: createBody, response: { 201: postSchema } },
  }, async (request, reply) => {
    const post = await posts.create(request.body, request.principal.userId ?? 0);
    cache.clear();
    return reply.code(201).header('location', `${POSTS_PATH}/${post.id}`).send(wire(post));
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { id: string }; Body: PostInput }>({
      method,
      url: `${POSTS_PATH}/:id`,
      ...writer,
      schema: { body: updateBody, response: { 200: postSchema } },
      handler: async (request) => {
        const post = await posts.update(parseId(request.params.id), request.body ?? {});
        cache.clear();
        return wire(post);
      },
    });
  }

  app.delete<{ Params: { id: string } }>(`${POSTS_PATH}/:id`, {
    ...writer,
    schema: {
      response: { 200: { type: 'object', properties: { deleted: { type: 'boolean' }, previous: postSchema } } },
    },
  }, async (request) => {
    const post = await posts.remove(parseId(request.params.id));
    cache.clear();
    return { deleted: true, previous: wire(post) };
  });
}
