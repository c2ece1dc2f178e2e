/**
 * POST /oauth/token: the client credentials grant (RFC 6749 §4.4) for the magic-link admin routes.
 * Client authentication by HTTP Basic or by client_id/client_secret form fields (§2.3.1), never both;
 * answers §5.1 on success and §5.2 errors, every answer with Cache-Control: no-store.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { installPartErrors, OAuthError } from '../errors.ts';
import { SCOPES, type OauthTokenService } from './service.ts';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const DEFAULT_SCOPE = 'magiclink';

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

  // §5.2 errors, the rate limit, outages: this route's row of the face's table (identity/errors.ts).
  installPartErrors(app, 'oauth-token');

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
        413: { description: 'invalid_request: the request body is over 256 KiB (the connection is then closed)', ...errorSchema },
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
