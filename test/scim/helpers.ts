/**
 * A composed Latchkey with a SCIM token for its customer, and a client that speaks to /scim/v2 as a
 * directory does (Authorization: Bearer, application/scim+json).
 */
import type { TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
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

export async function buildScim(t: TestContext, kind: StoreKind): Promise<ScimApp> {
  const app = await build(t, kind, { LATCHKEY_PUBLIC_URL: PUBLIC_URL });
  const tokens = app.composition.services.scimTokens;
  const { scimToken, token } = await tokens.create(app.customer.customerId, 'directory');
  return {
    ...app,
    scim: scimClient(app, token, scimToken.tokenId),
    async otherCustomerScim() {
      const other = await app.newCustomer();
      const created = await tokens.create(other.customer.customerId, 'other');
      return scimClient(app, created.token, created.scimToken.tokenId);
    },
  };
}

/** The body of a SCIM error answer. */
export const scimError = (status: number, detail: string, scimType?: string) =>
  ({ schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail });
