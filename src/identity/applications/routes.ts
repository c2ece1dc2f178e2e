/** HTTP for /admin/applications/create|getall|delete (DESIGN: Admin API extension). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../../http/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { APPLICATION_NAME } from './rules.ts';
import { MAX_ENTITY_ID_LENGTH, MAX_SP_CERTIFICATE_LENGTH, MAX_SP_METADATA_LENGTH } from './saml-rules.ts';
import { deletedResponse, errorResponses, successResponse, urlList, uuidString } from './schemas.ts';
import type { ApplicationsService } from './service.ts';
import { APPLICATION_TYPES, NAME_ID_FORMATS, type ApplicationInput } from './types.ts';
import { MAX_URL_LENGTH } from './urls.ts';
import { toWireApplication } from './wire.ts';

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
    postLogoutRedirectUris: { type: 'array', items: { type: 'string' }, description: 'OAUTH only (always listed for OAUTH, [] when none)' },
    entityId: { type: 'string', description: 'SAML only: the service provider\'s entity ID' },
    acsUrls: { type: 'array', items: { type: 'string' }, description: 'SAML only: the assertion consumer service URLs; the first is the default' },
    nameIdFormat: { type: 'string', enum: NAME_ID_FORMATS, description: 'SAML only' },
    sloUrl: { type: 'string', description: 'SAML only: where LogoutResponses go; "" when the service provider has no single logout' },
    spCertificate: { type: 'string', description: 'SAML only: the PEM certificate its requests must be signed with; "" when none' },
  },
} as const;

export async function applicationRoutes(app: FastifyInstance, opts: { applications: ApplicationsService }): Promise<void> {
  const { applications } = opts;
  const tags = ['Applications'];

  app.post('/admin/applications/create', {
    // PEM and metadata XML are text of several lines.
    config: { multilineFields: ['spCertificate', 'spMetadata'] },
    schema: {
      tags,
      summary: 'Create an application; an OAUTH application\'s clientSecret is in this response only',
      description: 'JWT needs at least one returnUrl; OAUTH at least one redirectUri (loginUrls and postLogoutRedirectUris optional); '
        + 'SAML an entityId and at least one acsUrl (nameIdFormat, sloUrl and spCertificate optional), or instead spMetadata (nameIdFormat may come along). '
        + 'A list or field another type uses must be absent or empty. A SAML entityId the customer already has is 409.',
      body: {
        type: 'object',
        required: ['customerKey', 'name', 'type'],
        properties: {
          customerKey: customerKeySchema,
          name: textSchema(APPLICATION_NAME),
          type: { type: 'string', enum: APPLICATION_TYPES },
          returnUrls: urlList('JWT: where the landing may send the user with the id_token'),
          redirectUris: urlList('OAUTH: the OpenID client\'s registered redirect URIs'),
          loginUrls: urlList('OAUTH: the application\'s login URLs; the first is the landing\'s default target'),
          postLogoutRedirectUris: urlList('OAUTH: where RP-initiated logout may send the browser back; a post_logout_redirect_uri must equal one of them exactly'),
          entityId: { type: 'string', maxLength: MAX_ENTITY_ID_LENGTH, description: 'SAML: the service provider\'s entity ID (a URI or URN; the AuthnRequest\'s Issuer and the Assertion\'s audience), unique per customer' },
          acsUrls: urlList('SAML: the assertion consumer service URLs (1 to 20) the Response may be posted to; the first is the default'),
          nameIdFormat: { type: 'string', enum: NAME_ID_FORMATS, description: 'SAML: the NameID sent: emailAddress (the e-mail, the default), persistent (an opaque identifier stable per user and application), unspecified (the username)' },
          sloUrl: { type: 'string', maxLength: MAX_URL_LENGTH, description: 'SAML: where the LogoutResponse of single logout goes (optional)' },
          spCertificate: { type: 'string', maxLength: MAX_SP_CERTIFICATE_LENGTH, description: 'SAML: the PEM X.509 certificate (RSA) the service provider signs its requests with; when set, unsigned AuthnRequests are refused (optional)' },
          spMetadata: { type: 'string', maxLength: MAX_SP_METADATA_LENGTH, description: 'SAML: the service provider\'s metadata XML (md:EntityDescriptor), instead of entityId, acsUrls, sloUrl and spCertificate: they are read from its SPSSODescriptor (HTTP-POST AssertionConsumerServices, SingleLogoutService, signing KeyDescriptor, NameIDFormat)' },
        },
      },
      response: {
        200: successResponse({
          application: applicationSchema,
          clientSecret: { type: 'string', description: 'OAUTH only, shown once: the OpenID client secret (client_id is applicationUuid)' },
        }, ['application']),
        ...errorResponses(409),
      },
    },
  }, async (request, reply) => {
    const body = request.body as ApplicationInput;
    const created = await applications.create(request.customer.id, {
      name: body.name, type: body.type, returnUrls: body.returnUrls, redirectUris: body.redirectUris, loginUrls: body.loginUrls,
      postLogoutRedirectUris: body.postLogoutRedirectUris,
      entityId: body.entityId, acsUrls: body.acsUrls, nameIdFormat: body.nameIdFormat, sloUrl: body.sloUrl,
      spCertificate: body.spCertificate, spMetadata: body.spMetadata,
    }, request.auditContext);
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
    await applications.delete(request.customer.id, applicationUuid, request.auditContext);
    request.log.info({ applicationUuid }, 'application deleted');
    return { status: 'SUCCESS', message: 'Application deleted.' };
  });
}

/** The application routes as an `areas` entry of the admin API. */
export const applicationsArea = (applications: ApplicationsService) => (app: FastifyInstance) => applicationRoutes(app, { applications });
