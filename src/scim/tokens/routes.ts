/** HTTP for /admin/scim-tokens/create|getall|delete (DESIGN: SCIM 2.0). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../../http/schemas.ts';
import { deletedResponse, errorResponses, successResponse } from '../../identity/applications/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { SCIM_TOKEN_NAME } from './rules.ts';
import type { ScimTokensService } from './service.ts';
import type { ScimToken } from './types.ts';

const scimTokenSchema = {
  type: 'object',
  required: ['tokenId', 'name', 'createdDttm', 'lastUsedDttm'],
  properties: {
    tokenId: { type: 'string', description: 'st_…' },
    name: { type: 'string' },
    createdDttm: { type: 'integer', description: 'Epoch milliseconds' },
    lastUsedDttm: { type: ['integer', 'null'], description: 'Epoch milliseconds of the last SCIM request it authorised (to the minute); null when never used' },
  },
} as const;

/** The listing record: never the token or its hash. */
export function toWireScimToken(token: ScimToken) {
  return { tokenId: token.tokenId, name: token.name, createdDttm: token.createdAt, lastUsedDttm: token.lastUsedAt };
}

export async function scimTokenRoutes(app: FastifyInstance, opts: { scimTokens: ScimTokensService }): Promise<void> {
  const { scimTokens } = opts;
  const tags = ['SCIM tokens'];

  app.post('/admin/scim-tokens/create', {
    schema: {
      tags,
      summary: 'Create a SCIM bearer token for {base_url}/scim/v2 (the customer is the only tenant it reaches); the token is in this response only',
      body: { type: 'object', required: ['customerKey', 'name'], properties: { customerKey: customerKeySchema, name: textSchema(SCIM_TOKEN_NAME) } },
      response: {
        200: successResponse({
          tokenId: { type: 'string', description: 'st_…: names the token in getall and delete' },
          token: { type: 'string', description: 'lkscim_…: shown once, stored hashed; sent as Authorization: Bearer <token>' },
        }, ['tokenId', 'token']),
        ...errorResponses(),
      },
    },
  }, async (request, reply) => {
    const created = await scimTokens.create(request.customer.id, (request.body as { name: string }).name, request.auditContext);
    request.log.info({ tokenId: created.scimToken.tokenId }, 'SCIM token created');
    // The only response that carries the token: no cache may keep it.
    reply.header('cache-control', 'no-store');
    return { status: 'SUCCESS', tokenId: created.scimToken.tokenId, token: created.token };
  });

  app.post('/admin/scim-tokens/getall', {
    schema: {
      tags,
      summary: 'List the customer\'s SCIM tokens in creation order (never the tokens)',
      body: { type: 'object', required: ['customerKey'], properties: { customerKey: customerKeySchema } },
      response: { 200: successResponse({ scimTokens: { type: 'array', items: scimTokenSchema } }, ['scimTokens']), ...errorResponses() },
    },
  }, async (request) => {
    const list = await scimTokens.list(request.customer.id);
    return { status: 'SUCCESS', scimTokens: list.map(toWireScimToken) };
  });

  app.post('/admin/scim-tokens/delete', {
    schema: {
      tags,
      summary: 'Delete a SCIM token: SCIM requests carrying it are refused from now on',
      body: {
        type: 'object',
        required: ['customerKey', 'tokenId'],
        properties: { customerKey: customerKeySchema, tokenId: { type: 'string', minLength: 1, maxLength: 100 } },
      },
      response: { 200: deletedResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { tokenId } = request.body as { tokenId: string };
    await scimTokens.delete(request.customer.id, tokenId, request.auditContext);
    request.log.info({ tokenId }, 'SCIM token deleted');
    return { status: 'SUCCESS', message: 'SCIM token deleted.' };
  });
}

/** The SCIM token routes as an `areas` entry of the admin API. */
export const scimTokensArea = (scimTokens: ScimTokensService) => (app: FastifyInstance) => scimTokenRoutes(app, { scimTokens });
