/**
 * A composed Latchkey with a site face serving the API-token routes, plus helpers to make site
 * users, administrators and tokens. Each call makes its own customer and data.
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../../src/audit/context.ts';
import type { User } from '../../../src/identity/users/types.ts';
import type { ApiTokenType, CreatedApiToken } from '../../../src/site/api-tokens/types.ts';
import { build, type TestApp } from '../../helpers/app.ts';
import type { StoreKind } from '../../helpers/stores.ts';

export const PASSWORD = 'correct horse battery staple';
export const INVALID = { error: { status: 'ERROR', message: 'The provided API key is invalid.' } };
export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const SECRET = /^lkat_[0-9A-Za-z]{50}$/;
export const DAY = 24 * 60 * 60 * 1000;

export interface TokenSite extends TestApp {
  site: FastifyInstance;
  siteUrl: string;
  /** The site's JSON log lines (with LATCHKEY_LOG_LEVEL set above silent). */
  logs: string[];
  customerId: number;
  /** Creates a site user (with a password) through the admin API. */
  createUser(username: string, fields?: { email?: string; firstName?: string; lastName?: string; groups?: string[] }): Promise<User>;
  /** Creates the groups (if needed) through the admin API. */
  createGroups(...names: string[]): Promise<void>;
  /** A new site administrator (member of the admin group). */
  createAdmin(username: string): Promise<User>;
  /** A token made through the service, for tests that are not about creation. */
  token(user: User, type: ApiTokenType, options?: { expiresInDays?: number; name?: string; customerId?: number }): Promise<CreatedApiToken>;
  get(url: string, authorization?: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  request(method: 'GET' | 'POST' | 'DELETE', url: string, authorization: string, body?: unknown): Promise<LightMyRequestResponse>;
}

export const basic = (username: string, secret: string): string => `Basic ${Buffer.from(`${username}:${secret}`, 'utf8').toString('base64')}`;
export const bearer = (secret: string): string => `Bearer ${secret}`;

export function json(res: LightMyRequestResponse, status: number): any {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  return res.json();
}

export async function buildTokenSite(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<TokenSite> {
  const app = await build(t, kind, env);
  const customerId = app.customer.customerId;
  // The real content site, bound to this test's customer.
  const logs: string[] = [];
  const site = await app.composition.buildSiteApp({ customerKey: app.customer.customerKey, logStream: { write: (line) => { logs.push(line); } } });
  t.after(() => site.close());
  const ck = app.customer.customerKey;

  async function createGroups(...names: string[]): Promise<void> {
    json(await app.admin.post('/admin/groups/update', { customerKey: ck, groups: names.map((groupName) => ({ groupName, isDefault: 'false' })) }), 200);
  }

  async function createUser(username: string, fields: { email?: string; firstName?: string; lastName?: string; groups?: string[] } = {}): Promise<User> {
    json(await app.admin.post('/admin/users/create', {
      customerKey: ck,
      username,
      email: fields.email ?? `${username.replace(/[^A-Za-z0-9.]/g, 'x')}@example.test`,
      firstName: fields.firstName ?? 'First',
      lastName: fields.lastName ?? 'Last',
      password: PASSWORD,
      ...(fields.groups ? { groups: fields.groups.map((name) => ({ name })) } : {}),
    }), 200);
    const user = await app.composition.services.users.findByLogin(customerId, username);
    assert.ok(user);
    return user;
  }

  return {
    ...app,
    site,
    siteUrl: app.composition.config.siteUrl,
    logs,
    customerId,
    createUser,
    createGroups,
    async createAdmin(username) {
      await createGroups(app.composition.config.site.adminGroup);
      return createUser(username, { groups: [app.composition.config.site.adminGroup] });
    },
    token: (user, type, options = {}) => app.composition.services.apiTokens.create(options.customerId ?? customerId, {
      userId: user.id, name: options.name ?? `${type} token`, type, expiresInDays: options.expiresInDays,
    }, SYSTEM),
    get: (url, authorization, headers = {}) => site.inject({
      method: 'GET', url, headers: { accept: 'application/json', ...(authorization === undefined ? {} : { authorization }), ...headers },
    }),
    request: (method, url, authorization, body) => site.inject({
      method, url,
      headers: { accept: 'application/json', authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    }),
  };
}
