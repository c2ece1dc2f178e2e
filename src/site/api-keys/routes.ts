/**
 * Self-service API keys over HTTP (/cms-json/api/v1/api-keys): a user lists, creates and revokes
 * their own keys; a site administrator manages every key, the default key included. The secret is
 * in the creation answer only, which is never cached.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { Forbidden, NotFound } from '../../lib/errors.ts';
import type { SiteApiKeysService } from './service.ts';
import { MAX_KEY_NAME_LENGTH } from './service.ts';
import { toWireKey } from './wire.ts';

export const API_KEYS_PATH = '/cms-json/api/v1/api-keys';
const DAY_MS = 24 * 60 * 60 * 1000;

const nullableString = { anyOf: [{ type: 'string' }, { type: 'null' }] } as const;
const keyProperties = {
  id: { type: 'integer' },
  user: nullableString,
  name: { type: 'string' },
  createdAt: { type: 'string' },
  expiresAt: nullableString,
  revoked: { type: 'boolean' },
} as const;
const keySchema = { type: 'object', properties: keyProperties } as const;

const createBody = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: MAX_KEY_NAME_LENGTH },
    /** Username or e-mail of the key's user (administrators only, unless it is the caller). */
    user: { type: 'string', minLength: 1, maxLength: 256 },
    /** true: the site's default read-only key (administrators only). */
    default: { type: 'boolean' },
    expiresInDays: { type: 'integer', minimum: 1, maximum: 36500 },
  },
} as const;

interface CreateBody { name?: string; user?: string; default?: boolean; expiresInDays?: number }

/** The calling user (not the default key) and whether they administer the site. */
async function caller(request: FastifyRequest): Promise<{ userId: number; username: string; isSiteAdmin: boolean }> {
  const { userId, username } = request.principal;
  if (userId === null || username === null) throw new Forbidden('no_user', 'API keys are managed by a user, not with the site API key.');
  return { userId, username, isSiteAdmin: (await request.principal.capabilities()).isSiteAdmin };
}

export async function apiKeyRoutes(app: FastifyInstance, opts: { apiKeys: SiteApiKeysService; customerId: number; clock: Clock }): Promise<void> {
  const { apiKeys, customerId, clock } = opts;

  app.get(API_KEYS_PATH, {
    schema: { response: { 200: { type: 'array', items: keySchema } } },
  }, async (request) => {
    const me = await caller(request);
    const keys = await apiKeys.list(customerId, me.isSiteAdmin ? {} : { userId: me.userId });
    return keys.map(toWireKey);
  });

  app.post<{ Body: CreateBody | undefined }>(API_KEYS_PATH, {
    onRequest: async (_request, reply) => { reply.header('cache-control', 'no-store'); },
    // No body at all means "a key for me, no name, no expiry"; a JSON `null` is a body, and not an
    // object: the schema refuses it.
    preValidation: async (request) => { if (request.body === undefined) request.body = {}; },
    schema: {
      body: createBody,
      response: { 201: { type: 'object', properties: { ...keyProperties, apiKey: { type: 'string' } } } },
    },
  }, async (request, reply) => {
    const me = await caller(request);
    const body = request.body ?? {};
    const forOther = body.default === true || (body.user !== undefined && body.user.toLowerCase() !== me.username.toLowerCase());
    if (forOther && !me.isSiteAdmin) throw new Forbidden('not_admin', 'Only site administrators manage other users\' and the default API keys.');
    const created = await apiKeys.create(customerId, {
      login: body.default === true ? undefined : body.user ?? me.username,
      name: body.name,
      expiresAt: body.expiresInDays === undefined ? undefined : clock.now() + body.expiresInDays * DAY_MS,
    }, request.auditContext);
    return reply.code(201).send({ ...toWireKey(created.key), apiKey: created.apiKey });
  });

  app.delete<{ Params: { id: string } }>(`${API_KEYS_PATH}/:id`, {
    schema: { response: { 200: keySchema } },
  }, async (request) => {
    const me = await caller(request);
    const raw = request.params.id;
    if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new NotFound('api_key', 'API key not found.');
    const key = await apiKeys.get(customerId, Number(raw));
    // Another user's key is "not found" to a non-administrator: ids are not secrets, but ownership is private.
    if (!me.isSiteAdmin && key.userId !== me.userId) throw new NotFound('api_key', 'API key not found.');
    return toWireKey(await apiKeys.revoke(customerId, key.id, request.auditContext));
  });
}
