/** HTTP for /admin/applications/create|getall|delete (DESIGN: Admin API extension). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema, nameString } from '../../http/schemas.ts';
import { deletedResponse, errorResponses, successResponse, urlList, uuidString } from './schemas.ts';
import type { ApplicationsService } from './service.ts';
import { APPLICATION_TYPES, type Application, type ApplicationInput } from './types.ts';

const applicationSchema = {
  type: 'object',
  required: ['applicationUuid', 'name', 'type', 'returnUrls', 'redirectUris', 'loginUrls'],
  properties: {
    applicationUuid: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    type: { type: 'string', enum: APPLICATION_TYPES },
    returnUrls: { type: 'array', items: { type: 'string' } },
    redirectUris: { type: 'array', items: { type: 'string' } },
    loginUrls: { type: 'array', items: { type: 'string' } },
  },
} as const;

/** The wire record: never a secret, its salt or hash. */
export function toWireApplication(app: Application) {
  return {
    applicationUuid: app.uuid,
    name: app.name,
    type: app.type,
    returnUrls: app.returnUrls,
    redirectUris: app.redirectUris,
    loginUrls: app.loginUrls,
  };
}

export async function applicationRoutes(app: FastifyInstance, opts: { applications: ApplicationsService }): Promise<void> {
  const { applications } = opts;
  const tags = ['Applications'];

  app.post('/admin/applications/create', {
    schema: {
      tags,
      summary: 'Create an application; an OAUTH application\'s clientSecret is in this response only',
      description: 'JWT needs at least one returnUrl; OAUTH at least one redirectUri (loginUrls optional); SAML takes no URLs. '
        + 'A list another type uses must be absent or empty.',
      body: {
        type: 'object',
        required: ['customerKey', 'name', 'type'],
        properties: {
          customerKey: customerKeySchema,
          name: nameString(100),
          type: { type: 'string', enum: APPLICATION_TYPES },
          returnUrls: urlList('JWT: where the landing may send the user with the id_token'),
          redirectUris: urlList('OAUTH: the OpenID client\'s registered redirect URIs'),
          loginUrls: urlList('OAUTH: the application\'s login URLs; the first is the landing\'s default target'),
        },
      },
      response: {
        200: successResponse({
          application: applicationSchema,
          clientSecret: { type: 'string', description: 'OAUTH only, shown once: the OpenID client secret (client_id is applicationUuid)' },
        }, ['application']),
        ...errorResponses(),
      },
    },
  }, async (request, reply) => {
    const body = request.body as ApplicationInput;
    const created = await applications.create(request.customer.id, {
      name: body.name, type: body.type, returnUrls: body.returnUrls, redirectUris: body.redirectUris, loginUrls: body.loginUrls,
    });
    request.log.info({ applicationUuid: created.application.uuid, type: created.application.type }, 'application created');
    const wire = { status: 'SUCCESS', application: toWireApplication(created.application) };
    if (created.clientSecret === undefined) return wire;
    // The only response that carries the secret: no cache may keep it.
    reply.header('cache-control', 'no-store');
    return { ...wire, clientSecret: created.clientSecret };
  });

  app.post('/admin/applications/getall', {
    schema: {
      tags,
      summary: 'List the customer\'s applications in creation order (no secrets)',
      body: { type: 'object', required: ['customerKey'], properties: { customerKey: customerKeySchema } },
      response: { 200: successResponse({ applications: { type: 'array', items: applicationSchema } }, ['applications']), ...errorResponses() },
    },
  }, async (request) => {
    const list = await applications.list(request.customer.id);
    return { status: 'SUCCESS', applications: list.map(toWireApplication) };
  });

  app.post('/admin/applications/delete', {
    schema: {
      tags,
      summary: 'Delete an application with its login policies and magic links',
      body: {
        type: 'object',
        required: ['customerKey', 'applicationUuid'],
        properties: { customerKey: customerKeySchema, applicationUuid: uuidString },
      },
      response: { 200: deletedResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { applicationUuid } = request.body as { applicationUuid: string };
    await applications.delete(request.customer.id, applicationUuid);
    request.log.info({ applicationUuid }, 'application deleted');
    return { status: 'SUCCESS', message: 'Application deleted.' };
  });
}

/** The application routes as an `areas` entry of the admin API. */
export const applicationsArea = (applications: ApplicationsService) => (app: FastifyInstance) => applicationRoutes(app, { applications });
