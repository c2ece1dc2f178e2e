/**
 * HTTP for /admin/magiclink/generate and /admin/magiclink/revoke (spec, Magic links). Signed like
 * every admin route, or with `Authorization: Bearer <access_token>` from POST /oauth/token
 * (admin-api.ts reads `config.bearerScope`). Bodies carry no customerKey: the customer is the
 * signer's or the token's. The response never holds the link, and no log line does.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../../http/schemas.ts';
import { MAX_URL_LENGTH } from '../applications/urls.ts';
import type { MagicLinksService } from './service.ts';
import { EXPIRY_DEFAULT, EXPIRY_MAX, EXPIRY_MIN, USERNAME_MAX, USERNAME_MIN, type GenerateInput } from './types.ts';

export const MAGIC_LINK_SCOPE = 'magiclink';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The OAuth scope a bearer token needs to call this admin route; absent: signature only. */
    bearerScope?: string;
  }
}

const usernameSchema = {
  type: 'string',
  description: `Username or primary e-mail of an existing user; ${USERNAME_MIN} to ${USERNAME_MAX} characters`,
} as const;

const errorBody = (description: string, properties: Record<string, unknown>, required: string[]) => ({
  description, type: 'object', required, properties,
});
const validation = errorBody('A field is missing or wrong (the message names it), or no policy with MAGIC_LINK first applies',
  { status: { type: 'string', enum: ['ERROR'] }, code: { type: 'string' }, message: { type: 'string' } }, ['status', 'code', 'message']);
const unauthorised = errorBody('Wrong signature or bearer token',
  { status: { type: 'string', enum: ['ERROR'] }, code: { type: 'string' }, message: { type: 'string' } }, ['status', 'code', 'message']);
const unexpected = errorBody('Unexpected failure',
  { status: { type: 'string', enum: ['ERROR'] }, message: { type: 'string' } }, ['status', 'message']);
// Body fields are strings, never limited by the schema: the length rule has its own message.
const security: { [scheme: string]: string[] }[] = [{ customerKey: [], timestamp: [], signature: [] }, { bearer: [] }];

export async function magicLinkRoutes(app: FastifyInstance, opts: { magicLinks: MagicLinksService }): Promise<void> {
  const { magicLinks } = opts;
  const tags = ['Magic links'];

  app.post('/admin/magiclink/generate', {
    config: { adminErrors: 'magic-link', bearerScope: MAGIC_LINK_SCOPE },
    // The correlationId names every log line of this request from here on.
    onRequest: (request, reply, done) => {
      const correlationId = randomUUID();
      request.log = request.log.child({ correlationId });
      reply.log = request.log;
      (request as { correlationId?: string }).correlationId = correlationId;
      done();
    },
    schema: {
      tags,
      summary: 'Generate an INVITE magic link; it is e-mailed to the user and never returned',
      security,
      body: {
        type: 'object',
        required: ['username', 'applicationUuid'],
        properties: {
          customerKey: customerKeySchema,
          username: usernameSchema,
          applicationUuid: { type: 'string', maxLength: 64, description: 'UUID of the target application' },
          redirectUri: {
            type: 'string',
            description: `At most ${MAX_URL_LENGTH} characters, http:// or https://, no whitespace, semicolons or commas. `
              + 'SAML: ignored. JWT: required, one of the returnUrls. OAUTH: optional, one of the loginUrls or redirectUris (default: the first loginUrl).',
          },
          expiryMinutes: { type: 'integer', description: `${EXPIRY_MIN} to ${EXPIRY_MAX}; default ${EXPIRY_DEFAULT}` },
        },
      },
      response: {
        200: {
          type: 'object',
          required: ['status', 'message', 'correlationId'],
          properties: { status: { type: 'string', enum: ['SUCCESS'] }, message: { type: 'string' }, correlationId: { type: 'string', format: 'uuid' } },
        },
        400: validation,
        401: unauthorised,
        404: errorBody('The user or the application does not exist',
          { status: { type: 'string', enum: ['ERROR'] }, statusCode: { type: 'integer' }, message: { type: 'string' } }, ['status', 'statusCode', 'message']),
        500: unexpected,
      },
    },
  }, async (request) => {
    const body = request.body as GenerateInput;
    const correlationId = (request as { correlationId?: string }).correlationId ?? randomUUID();
    await magicLinks.generate(request.customer.id, {
      username: body.username,
      applicationUuid: body.applicationUuid,
      redirectUri: body.redirectUri,
      expiryMinutes: body.expiryMinutes,
    }, correlationId, request.auditContext);
    request.log.info({ customerId: request.customer.id }, 'magic link generated');
    return { status: 'SUCCESS', message: 'The magic link has been sent to the user\'s registered e-mail address.', correlationId };
  });

  app.post('/admin/magiclink/revoke', {
    config: { adminErrors: 'magic-link', bearerScope: MAGIC_LINK_SCOPE },
    schema: {
      tags,
      summary: 'Revoke the user\'s active INVITE magic links (immediate, irreversible)',
      security,
      body: {
        type: 'object',
        required: ['username'],
        properties: { customerKey: customerKeySchema, username: usernameSchema },
      },
      response: {
        200: {
          type: 'object',
          required: ['status', 'message'],
          properties: { status: { type: 'string', enum: ['SUCCESS'] }, message: { type: 'string' } },
        },
        400: validation,
        401: unauthorised,
        404: errorBody('The user has no active INVITE link (an unknown user has none either)',
          { status: { type: 'string', enum: ['FAILED'] }, message: { type: 'string' } }, ['status', 'message']),
        500: unexpected,
      },
    },
  }, async (request) => {
    const revoked = await magicLinks.revoke(request.customer.id, (request.body as { username: string }).username, request.auditContext);
    request.log.info({ customerId: request.customer.id, revoked }, 'magic links revoked');
    return { status: 'SUCCESS', message: revoked === 1 ? 'The invite link has been revoked.' : `${revoked} invite links have been revoked.` };
  });
}

/** The routes as an `areas` entry of the admin API. */
export const magicLinksArea = (magicLinks: MagicLinksService) => (app: FastifyInstance) => magicLinkRoutes(app, { magicLinks });
