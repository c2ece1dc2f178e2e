/** HTTP for /admin/oauth-clients/create|getall|delete (DESIGN: Admin API extension). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../../http/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { OAUTH_CLIENT_NAME } from './rules.ts';
import { deletedResponse, errorResponses, successResponse } from '../applications/schemas.ts';
import type { OauthClientsService } from './service.ts';
import type { OauthClient } from './types.ts';

const clientSchema = {
  type: 'object',
  required: ['clientId', 'name', 'createdAt'],
  properties: {
    clientId: { type: 'string' },
    name: { type: 'string' },
    createdAt: { type: 'integer', description: 'Epoch milliseconds' },
  },
} as const;

/** The listing record: never the secret or its hash. */
export function toWireClient(client: OauthClient) {
  return { clientId: client.clientId, name: client.name, createdAt: client.createdAt };
}

export async function oauthClientRoutes(app: FastifyInstance, opts: { oauthClients: OauthClientsService }): Promise<void> {
  const { oauthClients } = opts;
  const tags = ['OAuth clients'];

  app.post('/admin/oauth-clients/create', {
    schema: {
      tags,
      summary: 'Create an OAuth client for POST /oauth/token (client credentials); its secret is in this response only',
      body: { type: 'object', required: ['customerKey', 'name'], properties: { customerKey: customerKeySchema, name: textSchema(OAUTH_CLIENT_NAME) } },
      response: {
        200: successResponse({ clientId: { type: 'string' }, clientSecret: { type: 'string', description: 'Shown once; stored hashed' } }, ['clientId', 'clientSecret']),
        ...errorResponses(),
      },
    },
  }, async (request, reply) => {
    const created = await oauthClients.create(request.customer.id, { name: (request.body as { name: string }).name }, request.auditContext);
    request.log.info({ clientId: created.client.clientId }, 'OAuth client created');
    // The only response that carries the secret: no cache may keep it.
    reply.header('cache-control', 'no-store');
    return { status: 'SUCCESS', clientId: created.client.clientId, clientSecret: created.clientSecret };
  });

  app.post('/admin/oauth-clients/getall', {
    schema: {
      tags,
      summary: 'List the customer\'s OAuth clients in creation order (no secrets)',
      body: { type: 'object', required: ['customerKey'], properties: { customerKey: customerKeySchema } },
      response: { 200: successResponse({ oauthClients: { type: 'array', items: clientSchema } }, ['oauthClients']), ...errorResponses() },
    },
  }, async (request) => {
    const list = await oauthClients.list(request.customer.id);
    return { status: 'SUCCESS', oauthClients: list.map(toWireClient) };
  });

  app.post('/admin/oauth-clients/delete', {
    schema: {
      tags,
      summary: 'Delete an OAuth client; its secret stops working at once',
      body: {
        type: 'object',
        required: ['customerKey', 'clientId'],
        properties: { customerKey: customerKeySchema, clientId: { type: 'string', minLength: 1, maxLength: 100 } },
      },
      response: { 200: deletedResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { clientId } = request.body as { clientId: string };
    await oauthClients.delete(request.customer.id, clientId, request.auditContext);
    request.log.info({ clientId }, 'OAuth client deleted');
    return { status: 'SUCCESS', message: 'OAuth client deleted.' };
  });
}

/** The OAuth client routes as an `areas` entry of the admin API. */
export const oauthClientsArea = (oauthClients: OauthClientsService) => (app: FastifyInstance) => oauthClientRoutes(app, { oauthClients });
