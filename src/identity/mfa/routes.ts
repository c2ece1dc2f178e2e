/**
 * HTTP for the authenticator app: /auth/google-auth-secret (start a registration),
 * /auth/validate-google-auth-secret (activate it with a code) and the extension
 * /admin/users/mfa/reset. Wire shapes only; the rules are in service.ts.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { customerKeySchema, nameString } from '../../http/schemas.ts';
import { Invalid, MfaFailed } from '../../lib/errors.ts';
import type { MfaService } from './service.ts';

const RESPONSE_TYPE = 'GOOGLE_AUTHENTICATOR';
const SIX_DIGITS = /^[0-9]{6}$/;

// The spec's request fields for both operations. questionAnswerList and registrationType are accepted
// and ignored (DESIGN: security questions are not a factor); so are otpToken and secret on register.
const requestProperties = {
  customerKey: customerKeySchema,
  username: nameString(255),
  authenticatorType: { type: 'string', enum: ['GOOGLE AUTHENTICATOR'] },
  questionAnswerList: { type: 'array', maxItems: 50 },
  registrationType: { type: 'string', maxLength: 255 },
  otpToken: { type: 'string', maxLength: 64 },
  secret: { type: 'string', maxLength: 128 },
  authenticatorName: { type: 'string', maxLength: 100 },
} as const;

const registerResponse = {
  type: 'object',
  properties: {
    txID: { type: 'string' }, responseType: { type: 'string' }, status: { type: 'string' }, message: { type: 'string' },
    qrCodeData: { type: 'string' }, secret: { type: 'string' },
  },
} as const;

const validateResponse = {
  type: 'object',
  properties: { txID: { type: 'string' }, responseType: { type: 'string' }, status: { type: 'string' }, message: { type: 'string' } },
} as const;

// MFA failures and not-found carry status and message; validation errors add code (errors.ts).
const failureResponse = {
  type: 'object',
  properties: { status: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
} as const;

interface MfaBody {
  username: string;
  otpToken?: string;
  secret?: string;
  authenticatorName?: string;
}

/** Logs which check failed (never the code or the secret) with the transaction id, then lets errors.ts answer. */
async function traced<T>(request: FastifyRequest, txID: string, action: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof MfaFailed) request.log.info({ txID, reason: error.reason }, `${action} refused`);
    throw error;
  }
}

export async function mfaRoutes(app: FastifyInstance, opts: { mfa: MfaService }): Promise<void> {
  const { mfa } = opts;
  const tags = ['Authenticator app (MFA)'];

  app.post('/auth/google-auth-secret', {
    config: { adminErrors: 'mfa' },
    schema: {
      tags,
      summary: 'Start an authenticator-app registration: a new secret and its QR code (authenticatorType defaults to GOOGLE AUTHENTICATOR)',
      body: { type: 'object', required: ['customerKey', 'username'], properties: requestProperties },
      response: { 200: registerResponse, 400: failureResponse, 404: failureResponse },
    },
  }, async (request, reply) => {
    const body = request.body as MfaBody;
    const txID = randomUUID();
    const registration = await mfa.register(request.customer.id, {
      login: body.username,
      authenticatorName: body.authenticatorName,
      customerDisplayName: request.customer.displayName,
    });
    request.log.info({ txID, userId: registration.userId }, 'authenticator registration started');
    // The only response that carries the secret: no cache may keep it.
    reply.header('cache-control', 'no-store');
    return {
      txID,
      responseType: RESPONSE_TYPE,
      status: 'SUCCESS',
      message: 'Scan the QR code with the authenticator app, then validate a code from it.',
      qrCodeData: registration.qrCodeData,
      secret: registration.secret,
    };
  });

  app.post('/auth/validate-google-auth-secret', {
    config: { adminErrors: 'mfa' },
    schema: {
      tags,
      summary: "Validate a code from the app against the pending registration; on success it becomes the user's second factor",
      body: {
        type: 'object',
        required: ['customerKey', 'username', 'authenticatorType', 'otpToken', 'secret'],
        properties: requestProperties,
      },
      response: { 200: validateResponse, 400: failureResponse, 404: failureResponse },
    },
  }, async (request) => {
    const body = request.body as Required<Pick<MfaBody, 'username' | 'otpToken' | 'secret'>>;
    // RFC 6238 with 6 digits: any other shape is bad input, not a failed attempt.
    if (!SIX_DIGITS.test(body.otpToken)) throw new Invalid('otpToken', 'must be a 6-digit code');
    const txID = randomUUID();
    const { userId } = await traced(request, txID, 'authenticator validation', () =>
      mfa.validate(request.customer.id, { login: body.username, secret: body.secret, otp: body.otpToken }, request.auditContext));
    request.log.info({ txID, userId }, 'authenticator registered');
    return { txID, responseType: RESPONSE_TYPE, status: 'SUCCESS', message: 'Authenticator app registered successfully.' };
  });

  app.post('/admin/users/mfa/reset', {
    config: { adminErrors: 'mfa' },
    schema: {
      tags,
      summary: "Extension: remove a user's authenticator app (pending and active) so that they can register again",
      body: {
        type: 'object',
        required: ['customerKey', 'username'],
        properties: { customerKey: customerKeySchema, username: nameString(255) },
      },
      response: {
        200: { type: 'object', properties: { customerId: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' } } },
        404: failureResponse,
      },
    },
  }, async (request) => {
    const { userId, removed } = await mfa.reset(request.customer.id, (request.body as { username: string }).username, request.auditContext);
    request.log.info({ userId, removed }, 'authenticator reset');
    return {
      customerId: request.customer.id,
      status: 'SUCCESS',
      message: removed ? 'Authenticator app removed.' : 'The user had no authenticator app.',
    };
  });
}

/** The MFA routes as an `areas` entry of the admin API. */
export const mfaArea = (mfa: MfaService) => (app: FastifyInstance) => mfaRoutes(app, { mfa });
