/**
 * buildSite(t, kind): the composed Latchkey of build() plus its content site bound to the test's own
 * customer, a log capture, and shortcuts to make site users and get them tokens.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import type { SiteAppOverrides } from '../../src/compose/site.ts';
import { build, type TestApp } from '../helpers/app.ts';
import type { StoreKind } from '../helpers/stores.ts';

export const PASSWORD = 'violet-otter-harbour-42';
export const TOKEN_PATH = '/cms-json/api/v1/token';
export const POSTS_PATH = '/cms-json/cms/v2/posts';

export interface SiteUserFixture { id: number; username: string; email: string; password: string }

export interface SiteTest extends TestApp {
  site: FastifyInstance;
  customerId: number;
  /** Every JSON log line the site wrote (set LATCHKEY_LOG_LEVEL to see more than nothing). */
  logs: string[];
  addUser(username: string, options?: { password?: string; groups?: string[] }): Promise<SiteUserFixture>;
  /** A JWT from the token endpoint (asserts success). */
  token(username: string, password?: string): Promise<string>;
  /** A user API key made through the service (the CLI's path). */
  userKey(username: string): Promise<string>;
  defaultKey(): Promise<string>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  get(url: string, headers?: Record<string, string | string[]>): Promise<LightMyRequestResponse>;
}

export async function buildSite(
  t: TestContext,
  kind: StoreKind = 'sqlite',
  options: { env?: Record<string, string>; overrides?: SiteAppOverrides } = {},
): Promise<SiteTest> {
  const app = await build(t, kind, options.env);
  const logs: string[] = [];
  const site = await app.composition.buildSiteApp({
    customerKey: app.customer.customerKey,
    logStream: { write: (line: string) => { logs.push(line); } },
    ...options.overrides,
  });
  t.after(() => site.close());
  const { services } = app.composition;
  const customerId = app.customer.customerId;

  const inject = (opts: InjectOptions) => site.inject(opts);
  return Object.assign(app, {
    site,
    customerId,
    logs,
    async addUser(username: string, opts: { password?: string; groups?: string[] } = {}) {
      const password = opts.password ?? PASSWORD;
      if (opts.groups?.length) {
        await services.groups.upsert(customerId, opts.groups.map((name) => ({ name, isDefault: false, attributes: {} })), SYSTEM);
      }
      const email = `${username}@example.test`;
      const user = await services.users.create(customerId, {
        username, email, firstName: 'Site', lastName: 'User', password, customAttributes: {},
        ...(opts.groups?.length ? { groups: opts.groups.map((name) => ({ name, attributes: [] })) } : {}),
      }, SYSTEM);
      return { id: user.id, username, email, password };
    },
    async token(username: string, password = PASSWORD) {
      const res = await inject({ method: 'POST', url: TOKEN_PATH, payload: { username, password } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().jwt_token as string;
    },
    async userKey(username: string) {
      return (await services.siteApiKeys.create(customerId, { login: username }, SYSTEM)).apiKey;
    },
    async defaultKey() {
      return (await services.siteApiKeys.create(customerId, {}, SYSTEM)).apiKey;
    },
    inject,
    get: (url: string, headers: Record<string, string | string[]> = {}) => inject({ method: 'GET', url, headers }),
  });
}

/** The spec's site error body. */
export function siteError(status: number, error: string, description: string) {
  return { status: 'error', error, code: String(status), error_description: description };
}

/** Asserts status and the whole JSON body. */
export function assertJson(res: LightMyRequestResponse, status: number, body: unknown): void {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepEqual(res.json(), body);
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const WP_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

/** Asserts a post's generated fields by format, then returns it with them fixed, for a whole-body compare. */
export function normalisePost(post: Record<string, any>, siteUrl = 'http://127.0.0.1:8081'): Record<string, unknown> {
  assert.equal(typeof post.id, 'number');
  for (const field of ['date', 'date_gmt', 'modified', 'modified_gmt']) assert.match(post[field], WP_DATE, field);
  assert.equal(post.date, post.date_gmt);
  assert.equal(post.modified, post.modified_gmt);
  assert.equal(post.guid.rendered, `${siteUrl}/?p=${post.id}`);
  assert.equal(post.link, `${siteUrl}/${post.slug}/`);
  return { ...post, id: 0, date: 'D', date_gmt: 'D', modified: 'M', modified_gmt: 'M', guid: { rendered: 'G' }, link: 'L' };
}

/** The posts the first start seeds, newest first, as normalisePost leaves them. */
export const SEEDED_POSTS = [
  {
    slug: 'api-keys-and-provider-tokens',
    title: 'API keys and provider tokens',
    content: '<p>Read-only clients use the site API key; integrations use a user API key, an API token, or a token from the configured OpenID provider.</p>\n',
  },
  {
    slug: 'getting-a-token',
    title: 'Getting a token',
    content: '<p>POST your username and password to <code>/cms-json/api/v1/token</code>, then send <code>Authorization: Bearer &lt;jwt_token&gt;</code>.</p>\n',
  },
  {
    slug: 'hello-world',
    title: 'Hello world',
    content: '<p>Welcome to the Latchkey content site. Every route of its REST API is protected.</p>\n',
  },
].map((p) => ({
  id: 0, date: 'D', date_gmt: 'D', guid: { rendered: 'G' }, modified: 'M', modified_gmt: 'M',
  slug: p.slug, status: 'publish', type: 'post', link: 'L', title: { rendered: p.title },
  content: { rendered: p.content, protected: false }, author: 0,
}));
