/**
 * A composed Latchkey with a SCIM token for its customer, and a client that speaks to /scim/v2 as a
 * directory does (Authorization: Bearer, application/scim+json).
 */
import type { TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import { build, type TestApp } from '../helpers/app.ts';
import type { StoreKind } from '../helpers/stores.ts';

export const SCIM_TYPE = 'application/scim+json; charset=utf-8';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
/** LATCHKEY_PUBLIC_URL of the test app: the SCIM base URL is under it. */
export const PUBLIC_URL = 'https://id.example.test';
export const BASE = `${PUBLIC_URL}/scim/v2`;

export interface ScimClient {
  token: string;
  tokenId: string;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

export function scimClient(app: TestApp, token: string, tokenId: string): ScimClient {
  return {
    token,
    tokenId,
    request: (method, path, body, headers = {}) => app.identity.inject({
      method: method as 'GET',
      url: `/scim/v2${path}`,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    }),
  };
}

export interface ScimApp extends TestApp {
  scim: ScimClient;
  /** A SCIM client of another customer of the same installation. */
  otherCustomerScim(): Promise<ScimClient>;
}

export async function buildScim(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<ScimApp> {
  const app = await build(t, kind, { LATCHKEY_PUBLIC_URL: PUBLIC_URL, ...env });
  const tokens = app.composition.services.scimTokens;
  const { scimToken, token } = await tokens.create(app.customer.customerId, 'directory', SYSTEM);
  return {
    ...app,
    scim: scimClient(app, token, scimToken.tokenId),
    async otherCustomerScim() {
      const other = await app.newCustomer();
      const created = await tokens.create(other.customer.customerId, 'other', SYSTEM);
      return scimClient(app, created.token, created.scimToken.tokenId);
    },
  };
}

/** The body of a SCIM error answer. */
export const scimError = (status: number, detail: string, scimType?: string) =>
  ({ schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail });

/** One request of a replayed directory conversation and what must come back. */
export interface ReplayStep<C> {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: (ctx: C) => string;
  body?: (ctx: C) => unknown;
  status: number;
  /** The whole answer body (deepEqual); undefined: no body (204). */
  expect?: (ctx: C, response: LightMyRequestResponse) => unknown;
  /** Reads what the answer says into the context (the id of what was created). */
  keep?: (ctx: C, body: Record<string, unknown>) => void;
  /** The effect seen through the admin API or the services. */
  effect?: (ctx: C) => Promise<void>;
}

/** Runs each step in order against `scim`, checking status, media type, Location and body. */
export async function replay<C>(scim: ScimClient, ctx: C, steps: ReplayStep<C>[], check: {
  deepEqual(actual: unknown, expected: unknown, message?: string): void;
  equal(actual: unknown, expected: unknown, message?: string): void;
}): Promise<void> {
  for (const step of steps) {
    const response = await scim.request(step.method, step.path(ctx), step.body?.(ctx));
    check.equal(response.statusCode, step.status, `${step.name}: status (${response.body})`);
    if (step.status === 204) {
      check.equal(response.body, '', `${step.name}: no body`);
    } else {
      check.equal(response.headers['content-type'], SCIM_TYPE, `${step.name}: media type`);
      const body = response.json() as Record<string, unknown>;
      step.keep?.(ctx, body);
      if (step.status === 201) check.equal(response.headers.location, (body.meta as { location: string }).location, `${step.name}: Location`);
      if (step.expect) check.deepEqual(body, step.expect(ctx, response), `${step.name}: body`);
    }
    await step.effect?.(ctx);
  }
}

/** A User resource as the service provider answers it, at the test clock's time `at`. */
export function userResource(u: {
  id: string; userName: string; givenName: string; familyName: string; email: string; active: boolean;
  externalId?: string; phone?: string; groups: { id: number | string; name: string }[]; createdAt: number; updatedAt?: number;
}) {
  const updatedAt = u.updatedAt ?? u.createdAt;
  return {
    schemas: [USER_SCHEMA],
    id: u.id,
    ...(u.externalId ? { externalId: u.externalId } : {}),
    userName: u.userName,
    name: { givenName: u.givenName, familyName: u.familyName },
    emails: [{ value: u.email, type: 'work', primary: true }],
    ...(u.phone ? { phoneNumbers: [{ value: u.phone, type: 'work', primary: true }] } : {}),
    active: u.active,
    groups: u.groups.map((g) => ({ value: String(g.id), display: g.name, $ref: `${BASE}/Groups/${g.id}` })),
    meta: {
      resourceType: 'User', created: new Date(u.createdAt).toISOString(), lastModified: new Date(updatedAt).toISOString(),
      location: `${BASE}/Users/${u.id}`, version: `W/"${updatedAt}"`,
    },
  };
}

/** A Group resource as answered; `members` undefined when excluded. */
export function groupResource(g: {
  id: string; displayName: string; externalId?: string; members?: { id: string; userName: string }[]; createdAt: number; updatedAt?: number;
}) {
  const updatedAt = g.updatedAt ?? g.createdAt;
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    ...(g.externalId ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    ...(g.members ? { members: g.members.map((m) => ({ value: m.id, display: m.userName, $ref: `${BASE}/Users/${m.id}` })) } : {}),
    meta: {
      resourceType: 'Group', created: new Date(g.createdAt).toISOString(), lastModified: new Date(updatedAt).toISOString(),
      location: `${BASE}/Groups/${g.id}`, version: `W/"${updatedAt}"`,
    },
  };
}

export const listOf = (resources: unknown[], total = resources.length, startIndex = 1) =>
  ({ schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources });

/** users/get through the admin API: the record, or undefined on 404. */
export async function adminUser(app: TestApp, username: string): Promise<Record<string, unknown> | undefined> {
  const response = await app.admin.post('/admin/users/get', { customerKey: app.customer.customerKey, username });
  if (response.statusCode === 404) return undefined;
  if (response.statusCode !== 200) throw new Error(`users/get answered ${response.statusCode}: ${response.body}`);
  return (response.json() as { users: Record<string, unknown>[] }).users[0];
}

/** groups/members through the admin API: "group: e-mail" per membership, sorted. */
export async function adminMemberships(app: TestApp): Promise<string[]> {
  const response = await app.admin.post('/admin/groups/members', { customerKey: app.customer.customerKey, batchNo: 1, batchSize: 100 });
  const body = response.json() as { groupDetails: { groupName: string; primaryEmail: string }[] };
  return body.groupDetails.map((m) => `${m.groupName}: ${m.primaryEmail}`).sort();
}

/** groups/getall through the admin API: the names, sorted. */
export async function adminGroupNames(app: TestApp): Promise<string[]> {
  const response = await app.admin.post('/admin/groups/getall', { customerKey: app.customer.customerKey, batchNo: 1, batchSize: 100 });
  return (response.json() as { groups: { groupName: string }[] }).groups.map((g) => g.groupName).sort();
}

/** The audit events of the customer, oldest first: "action actorType:actorId targetName". */
export async function auditTrail(app: TestApp): Promise<string[]> {
  const page = await app.composition.services.audit.list(app.customer.customerId, { limit: 500 });
  return page.events.reverse().map((e) => `${e.action} ${e.actor.type}:${e.actor.id} ${e.target.name}`);
}
