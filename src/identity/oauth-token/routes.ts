/**
 * POST /oauth/token: the client credentials grant (RFC 6749 §4.4) for the magic-link admin routes.
 * Client authentication by HTTP Basic or by client_id/client_secret form fields (§2.3.1), never both;
 * answers §5.1 on success and §5.2 errors, every answer with Cache-Control: no-store.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { logServerError } from '../../http/app.ts';
import { asServiceUnavailable, RateLimited } from '../../lib/errors.ts';
import { SCOPES, type OauthTokenService } from './service.ts';

type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

/** A §5.2 error; invalid_client is 401 with a Basic challenge (§5.2: the client may have used Basic). */
class OAuthError extends Error {
  constructor(readonly error: OAuthErrorCode, readonly description: string) {
    super(description);
  }
}

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const DEFAULT_SCOPE = 'magiclink';

function sendError(reply: FastifyReply, error: OAuthErrorCode, description: string): FastifyReply {
  if (error === 'invalid_client') reply.header('www-authenticate', 'Basic realm="latchkey", charset="UTF-8"');
  return reply.code(error === 'invalid_client' ? 401 : 400)
    .headers({ 'cache-control': 'no-store', pragma: 'no-cache' })
    .type('application/json; charset=utf-8')
    .send({ error, error_description: description });
}

/** The Basic credentials of §2.3.1: both parts form-urlencoded, then base64. */
function basicCredentials(header: string): { clientId: string; clientSecret: string } {
  const match = /^\s*basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(header);
  if (!match) throw new OAuthError('invalid_client', 'the Authorization header must be Basic with base64 of client_id:client_secret');
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'the Basic credentials must be client_id:client_secret');
  try {
    const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
    return { clientId: decode(decoded.slice(0, colon)), clientSecret: decode(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'the Basic credentials are not form-urlencoded');
  }
}

/** One value per parameter (§3.1: parameters must not repeat); undefined when absent or empty. */
function param(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} must be given once`);
  return value === '' ? undefined : value;
}

const errorSchema = {
  type: 'object',
  required: ['error', 'error_description'],
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
} as const;

export async function oauthTokenRoutes(app: FastifyInstance, opts: { tokens: OauthTokenService }): Promise<void> {
  await app.register(formbody);

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof OAuthError) return sendError(reply, error.error, error.description);
    // Over the address's request budget (http/rate-limit.ts set Retry-After): §5.2 has no code for it.
    if (error instanceof RateLimited) return reply.code(429).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({ error: 'temporarily_unavailable', error_description: error.message });
    const status = (error as { statusCode?: number }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) return sendError(reply, 'invalid_request', 'the request is malformed');
    if ((error as { code?: string }).code === 'invalid') return sendError(reply, 'invalid_request', 'the request is malformed');
    logServerError(request.log, error);
    // The database (or Redis) is down: no token without checking the client. RFC 6749 names this
    // condition temporarily_unavailable (§4.1.2.1); §5.2's body shape, 503 with Retry-After.
    const unavailable = asServiceUnavailable(error);
    if (unavailable) {
      return reply.code(503).headers({ 'cache-control': 'no-store', pragma: 'no-cache', 'retry-after': String(unavailable.retryAfterSeconds) })
        .send({ error: 'temporarily_unavailable', error_description: unavailable.message });
    }
    return reply.code(500).headers({ 'cache-control': 'no-store' }).send({ error: 'server_error', error_description: 'An unexpected error occurred.' });
  });

  app.post('/oauth/token', {
    schema: {
      tags: ['OAuth 2.0'],
      summary: 'Client credentials grant: an access token for the magic-link routes (Authorization: Bearer)',
      security: [{ clientBasic: [] }, {}],
      consumes: ['application/x-www-form-urlencoded'],
      body: {
        type: 'object',
        properties: {
          grant_type: { type: 'string', enum: ['client_credentials'] },
          scope: { type: 'string', description: `Space-separated; only ${SCOPES.join(', ')} (the default)` },
          client_id: { type: 'string', description: 'With client_secret, instead of HTTP Basic' },
          client_secret: { type: 'string' },
        },
      },
      response: {
        200: {
          type: 'object',
          required: ['access_token', 'token_type', 'expires_in', 'scope'],
          properties: {
            access_token: { type: 'string' }, token_type: { type: 'string', enum: ['Bearer'] }, expires_in: { type: 'integer' }, scope: { type: 'string' },
          },
        },
        400: { description: 'invalid_request, unsupported_grant_type or invalid_scope (RFC 6749 §5.2)', ...errorSchema },
        401: { description: 'invalid_client: unknown client or wrong secret', ...errorSchema },
        429: { description: 'temporarily_unavailable: too many requests; Retry-After says when to try again', ...errorSchema },
        503: { description: 'temporarily_unavailable: the database cannot be reached; Retry-After says when to try again', ...errorSchema },
      },
    },
    // The schema documents the form; the checks below answer in RFC 6749's words instead of Ajv's.
    validatorCompiler: () => () => true,
  }, async (request, reply) => {
    if (!FORM.test(String(request.headers['content-type'] ?? ''))) {
      throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
    }
    const body = (request.body ?? {}) as Record<string, unknown>;
    const formId = param(body, 'client_id');
    const formSecret = param(body, 'client_secret');
    const grantType = param(body, 'grant_type');
    const scopeParam = param(body, 'scope');
    const authorization = request.headers.authorization;

    let clientId: string;
    let clientSecret: string;
    if (authorization !== undefined) {
      if (formSecret !== undefined) throw new OAuthError('invalid_request', 'use one client authentication method: HTTP Basic or client_secret, not both');
      ({ clientId, clientSecret } = basicCredentials(authorization));
      if (formId !== undefined && formId !== clientId) throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
    } else {
      if (formId === undefined || formSecret === undefined) throw new OAuthError('invalid_client', 'client authentication is required (HTTP Basic or client_id and client_secret)');
      clientId = formId;
      clientSecret = formSecret;
    }
    if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required');
    if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', 'only client_credentials is supported');
    const requested = (scopeParam ?? DEFAULT_SCOPE).split(' ').filter((s) => s !== '');
    const unknown = requested.find((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown !== undefined || requested.length === 0) throw new OAuthError('invalid_scope', `the only scope is ${SCOPES.join(' ')}`);

    const issued = await opts.tokens.issue(clientId, clientSecret, [...new Set(requested)].join(' '));
    if (!issued) throw new OAuthError('invalid_client', 'client authentication failed');
    return reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' })
      .send({ access_token: issued.accessToken, token_type: 'Bearer', expires_in: issued.expiresIn, scope: issued.scope });
  });
}

export const oauthTokenPlugin = (tokens: OauthTokenService) => (app: FastifyInstance) => oauthTokenRoutes(app, { tokens });
