/**
 * POST /cms-json/api/v1/token: username and password (and `otp` for users with an authenticator) as
 * form-urlencoded, multipart (fields only) or JSON; answers the spec's issued-JWT fields. Every answer
 * carries Cache-Control: no-store.
 */
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import type { TokenService } from './service.ts';

export const TOKEN_PATH = '/cms-json/api/v1/token';

/** Longest accepted values: far above any real one, far below what would cost us work. */
const LIMITS = { username: 256, password: 1024, otp: 16 } as const;
const BODY_LIMIT = 16 * 1024;
const CONTROL = /[\u0000-\u001f\u007f]/;

const issuedJwtSchema = {
  type: 'object',
  required: ['token_type', 'iat', 'expires_in', 'jwt_token'],
  properties: {
    token_type: { type: 'string', const: 'Bearer' },
    iat: { type: 'integer', description: 'Issue time, Unix seconds.' },
    expires_in: { type: 'integer', description: 'Expiry time: an absolute Unix-seconds timestamp, as in the spec.' },
    jwt_token: { type: 'string' },
  },
} as const;

interface MultipartField { type?: string; value?: unknown; valueTruncated?: boolean }

/** One parameter as a string, from any of the three body formats. @throws Invalid (BAD_REQUEST) */
function parameter(body: Record<string, unknown>, name: keyof typeof LIMITS, isMultipart: boolean): string | undefined {
  let value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (Array.isArray(value)) throw new Invalid(name, 'must be given once');
  if (isMultipart && value !== undefined) {
    const part = value as MultipartField;
    if (part.type !== 'field') throw new Invalid(name, 'must be a form field');
    if (part.valueTruncated) throw new Invalid(name, 'is too long');
    value = part.value;
  }
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Invalid(name, 'must be a string');
  if (value.length > LIMITS[name]) throw new Invalid(name, 'is too long');
  if (name !== 'password' && CONTROL.test(value)) throw new Invalid(name, 'must not contain control characters');
  return value;
}

export async function tokenRoutes(app: FastifyInstance, opts: { tokens: TokenService }): Promise<void> {
  await app.register(formbody, { bodyLimit: BODY_LIMIT });
  await app.register(multipart, {
    attachFieldsToBody: true,
    // Fields only, few and small: a login form has three.
    limits: { fieldNameSize: 64, fieldSize: 2048, fields: 8, files: 0, parts: 8, headerPairs: 16 },
  });

  app.post(TOKEN_PATH, {
    bodyLimit: BODY_LIMIT,
    config: { siteAuth: false },
    schema: { response: { 200: issuedJwtSchema } },
    // Set first, so error answers carry it too.
    onRequest: async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      reply.header('pragma', 'no-cache');
    },
  }, async (request) => {
    const raw = request.body;
    if (raw !== undefined && (raw === null || typeof raw !== 'object' || Array.isArray(raw))) {
      throw new Invalid('body', 'must be a form or a JSON object');
    }
    const body = (raw ?? {}) as Record<string, unknown>;
    const isMultipart = request.isMultipart();
    const username = parameter(body, 'username', isMultipart);
    const password = parameter(body, 'password', isMultipart);
    const otp = parameter(body, 'otp', isMultipart);
    if (username === undefined) throw new Invalid('username', 'is required');
    if (password === undefined) throw new Invalid('password', 'is required');

    const issued = await opts.tokens.login({ username, password, otp, clientAddress: request.ip });
    return { token_type: 'Bearer', iat: issued.iat, expires_in: issued.exp, jwt_token: issued.token };
  });
}
