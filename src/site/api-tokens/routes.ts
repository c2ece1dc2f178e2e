/**
 * HTTP for API token management under /rest/api/2/tokens: schemas, wire shapes, who is asking.
 * The caller is request.principal (password, site JWT or API token); rules live in service.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { nameString } from '../../http/schemas.ts';
import type { Clock } from '../../lib/clock.ts';
import { Forbidden, Invalid, Unauthenticated, UserNotFound } from '../../lib/errors.ts';
import { parseBasicAuthorization } from '../protect/api-token.ts';
import { API_TOKEN_PREFIX, type Principal } from '../protect/principal.ts';
import type { PasswordAuthenticator } from './password-auth.ts';
import type { ApiTokensService, TokenActor } from './service.ts';
import type { ApiToken, ApiTokenType, CreatedApiToken } from './types.ts';

export interface ApiTokenRoutesOptions {
  tokens: ApiTokensService;
  clock: Clock;
  siteCustomerId(): Promise<number | undefined>;
  /**
   * Management is also open to `Authorization: Basic base64(username:password)`: a Basic secret
   * without the API-token prefix is checked as the user's password. Other credentials go to
   * `authenticate` (the protection plugin's), which sets request.principal or throws.
   */
  password: PasswordAuthenticator;
  authenticate(request: FastifyRequest): Promise<Principal>;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The wire shape of a token: never its secret, except `token` once in the create response. */
export function toWireToken(token: ApiToken, now: number) {
  return {
    id: token.id,
    name: token.name,
    type: token.type,
    username: token.username,
    createdAt: iso(token.createdAt)!,
    expiresAt: iso(token.expiresAt),
    lastUsedAt: iso(token.lastUsedAt),
    expired: token.expiresAt !== null && token.expiresAt <= now,
  };
}

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;

const tokenProperties = {
  id: { type: 'integer' },
  name: { type: 'string' },
  type: { type: 'string', enum: ['basic', 'bearer'] },
  username: { type: 'string', description: 'The owner.' },
  createdAt: dateTime,
  expiresAt: { ...nullableDateTime, description: 'null: the token never expires.' },
  lastUsedAt: { ...nullableDateTime, description: 'Last successful use, to the minute; null: never used.' },
  expired: { type: 'boolean' },
} as const;

const tokenSchema = { type: 'object', required: Object.keys(tokenProperties), properties: tokenProperties } as const;

const createdTokenSchema = {
  type: 'object',
  required: [...Object.keys(tokenProperties), 'token'],
  properties: {
    ...tokenProperties,
    token: { type: 'string', description: 'The secret: shown in this response only, never again.' },
  },
} as const;

const usernameQuery = {
  type: 'object',
  properties: { username: { ...nameString(255), description: "Another user's username or e-mail (site administrators only)." } },
} as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,14}$' } },
} as const;

/** Appended to every management route's description (the OpenAPI document's only word on it). */
const AUTH = ' Authenticate with the password (`Basic base64(username:password)`), a site JWT, an API token '
  + '(Basic or Bearer) or a user API key.';

interface CreateBody {
  name: string;
  type: ApiTokenType;
  expiresInDays?: number;
  expiresAt?: string;
  username?: string;
}

export async function apiTokenRoutes(app: FastifyInstance, opts: ApiTokenRoutesOptions): Promise<void> {
  const { tokens, clock } = opts;

  // Every route here says `siteAuth: false`: the site-wide protection skips them and this hook,
  // which also knows passwords, authenticates instead.
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    const credentials = typeof header === 'string' ? parseBasicAuthorization(header) : undefined;
    if (!credentials || credentials.secret.startsWith(`${API_TOKEN_PREFIX}_`)) {
      request.principal = await opts.authenticate(request);
      return;
    }
    const customerId = await opts.siteCustomerId();
    if (customerId === undefined) throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
    request.principal = await opts.password(customerId, credentials.username, credentials.secret, request.ip);
  });

  async function context(request: FastifyRequest): Promise<{ customerId: number; actor: TokenActor }> {
    const { principal } = request;
    // The site's default API key acts as no user: it has no tokens to manage.
    if (principal.userId === null) throw new Forbidden('no_user', 'this credential does not belong to a user');
    const customerId = await opts.siteCustomerId();
    if (customerId === undefined) throw new UserNotFound();
    const userId = principal.userId;
    return { customerId, actor: { userId, isSiteAdmin: async () => (await principal.capabilities()).isSiteAdmin } };
  }

  app.post<{ Body: CreateBody }>('/rest/api/2/tokens', {
    config: { siteAuth: false },
    schema: {
      tags: ['API tokens'],
      summary: 'Create an API token',
      description: 'Creates a Basic or Bearer token for the caller (or, for a site administrator, for `username`). '
        + 'Give `expiresInDays` or `expiresAt`, or neither for the longest lifetime the administrator allows '
        + '(no expiry when there is no maximum). The secret is in this response only.' + AUTH,
      body: {
        type: 'object',
        required: ['name', 'type'],
        properties: {
          name: nameString(100),
          type: { type: 'string', enum: ['basic', 'bearer'] },
          expiresInDays: { type: 'integer', minimum: 1, maximum: 36500 },
          expiresAt: dateTime,
          username: usernameQuery.properties.username,
        },
      },
      response: { 201: createdTokenSchema },
    },
  }, async (request, reply) => {
    const { customerId, actor } = await context(request);
    const body = request.body;
    const owner = await tokens.resolveOwner(customerId, actor, body.username);
    let expiresAt: number | undefined;
    if (body.expiresAt !== undefined) {
      expiresAt = Date.parse(body.expiresAt);
      if (!Number.isFinite(expiresAt)) throw new Invalid('expiresAt', 'must be an ISO 8601 date-time');
    }
    const created: CreatedApiToken = await tokens.create(customerId, {
      userId: owner.id, name: body.name, type: body.type, expiresInDays: body.expiresInDays, expiresAt,
    }, request.auditContext);
    reply.code(201).header('cache-control', 'no-store');
    return { ...toWireToken(created, created.createdAt), token: created.secret };
  });

  app.get<{ Querystring: { username?: string } }>('/rest/api/2/tokens', {
    config: { siteAuth: false },
    schema: {
      tags: ['API tokens'],
      summary: "List the caller's API tokens (or a user's, for a site administrator)",
      description: 'Live and expired tokens, oldest first; never their secrets.' + AUTH,
      querystring: usernameQuery,
      response: { 200: { type: 'array', items: tokenSchema } },
    },
  }, async (request) => {
    const { customerId, actor } = await context(request);
    const owner = await tokens.resolveOwner(customerId, actor, request.query.username);
    const now = clock.now();
    return (await tokens.list(customerId, owner.id)).map((t) => toWireToken(t, now));
  });

  app.delete<{ Querystring: { username?: string } }>('/rest/api/2/tokens/expired', {
    config: { siteAuth: false },
    schema: {
      tags: ['API tokens'],
      summary: "Delete all expired tokens of the caller (or of a user, for a site administrator)",
      description: AUTH.trim(),
      querystring: usernameQuery,
      response: { 200: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'integer' } } } },
    },
  }, async (request) => {
    const { customerId, actor } = await context(request);
    const owner = await tokens.resolveOwner(customerId, actor, request.query.username);
    return { deleted: await tokens.deleteExpired(customerId, owner.id, request.auditContext) };
  });

  app.get<{ Params: { id: string } }>('/rest/api/2/tokens/:id', {
    config: { siteAuth: false },
    schema: {
      tags: ['API tokens'],
      summary: 'Read one API token (its expiry, last use)',
      description: AUTH.trim(),
      params: idParams,
      response: { 200: tokenSchema },
    },
  }, async (request) => {
    const { customerId, actor } = await context(request);
    return toWireToken(await tokens.getManaged(customerId, actor, Number(request.params.id)), clock.now());
  });

  app.delete<{ Params: { id: string } }>('/rest/api/2/tokens/:id', {
    config: { siteAuth: false },
    schema: {
      tags: ['API tokens'],
      summary: 'Revoke (delete) an API token; it stops working at once',
      description: AUTH.trim(),
      params: idParams,
      response: { 204: { type: 'null', description: 'Revoked.' } },
    },
  }, async (request, reply) => {
    const { customerId, actor } = await context(request);
    const token = await tokens.getManaged(customerId, actor, Number(request.params.id));
    await tokens.revoke(customerId, token.id, request.auditContext);
    return reply.code(204).send();
  });
}
