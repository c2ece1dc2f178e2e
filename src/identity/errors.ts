/**
 * The admin API's wire error bodies, written here and nowhere else. Routes name their variant in
 * `config.adminErrors`; the spec gives some routes their own unauthorised or not-found bodies.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { logServerError, sendWire, type WireError } from '../http/app.ts';
import { asServiceUnavailable, LatchkeyError, MfaFailed, NotFound, RateLimited, USER_NOT_FOUND_MESSAGE } from '../lib/errors.ts';

export type AdminErrorStyle =
  | 'standard'
  | 'disable-enable'
  | 'change-password'
  | 'magic-link'
  | 'get-user'
  | 'delete-user'
  | 'mfa';

declare module 'fastify' {
  interface FastifyContextConfig {
    adminErrors?: AdminErrorStyle;
  }
}

export type { WireError };

const DENIED = 'API Request denied: Incorrect Authorization header.';
export const UNEXPECTED = 'An unexpected error occurred.';

/** Facts of the request that some bodies echo (customerId, username). */
export interface ErrorContext {
  customerId?: number;
  username?: string;
}

const standard = (status: number, message: string) => ({ status, body: { status: 'ERROR', code: String(status), message } });

export function unauthorised(style: AdminErrorStyle): WireError {
  switch (style) {
    case 'disable-enable':
      return { status: 400, body: `API Authorization: ${DENIED}` };
    case 'change-password':
      return { status: 401, body: { status: 'error', code: '401', message: DENIED } };
    default:
      return standard(401, DENIED);
  }
}

function notFound(style: AdminErrorStyle, error: NotFound, ctx: ErrorContext): WireError {
  switch (style) {
    case 'get-user':
      return { status: 404, body: { username: ctx.username ?? '', status: 'FAILED', message: USER_NOT_FOUND_MESSAGE } };
    case 'disable-enable':
      return { status: 403, body: USER_NOT_FOUND_MESSAGE };
    case 'delete-user':
      return { status: 403, body: NOT_AUTHORISED };
    case 'magic-link':
      // Revoke with no active link: the spec's FAILED body. Generate: the user's or the application's.
      if (error.entity === 'invite link') return { status: 404, body: { status: 'FAILED', message: error.message } };
      return { status: 404, body: { status: 'ERROR', statusCode: 404, message: error.entity === 'application' ? error.message : 'The username does not exist.' } };
    case 'mfa':
      return { status: 404, body: { status: 'FAILED', message: USER_NOT_FOUND_MESSAGE } };
    case 'change-password':
      return { status: 400, body: { customerId: ctx.customerId ?? 0, status: 'ERROR', message: USER_NOT_FOUND_MESSAGE } };
    default:
      return standard(404, error.message);
  }
}

const NOT_AUTHORISED = 'You are not authorized to perform this operation.';

/** Turns any error into the wire body of the route's style. Unknown errors never leak detail. */
export function toWire(error: unknown, style: AdminErrorStyle, ctx: ErrorContext = {}): WireError {
  const wire = wireBody(error, style, ctx);
  // Spec, errors: on delete, "request body incorrect" answers like "user not found". Every 400 is a
  // body problem (wrong field, malformed JSON); 413 and 415 are about the transport and stay.
  if (style === 'delete-user' && wire.status === 400) return { status: 403, body: NOT_AUTHORISED };
  return wire;
}

function wireBody(error: unknown, style: AdminErrorStyle, ctx: ErrorContext): WireError {
  // The database is down: refused in every route's style alike (the spec has no 503 variants).
  const unavailable = asServiceUnavailable(error);
  if (unavailable) return { ...standard(503, unavailable.message), headers: { 'retry-after': String(unavailable.retryAfterSeconds) } };
  if (error instanceof LatchkeyError) {
    switch (error.code) {
      case 'unauthenticated':
        return unauthorised(style);
      case 'not_found':
        return notFound(style, error as NotFound, ctx);
      case 'invalid':
        if (style === 'change-password')
          return { status: 400, body: { customerId: ctx.customerId ?? 0, status: 'ERROR', message: error.message } };
        return standard(400, error.message);
      case 'mfa_failed':
        return { status: 400, body: { status: 'FAILED', message: (error as MfaFailed).message } };
      case 'conflict':
        return standard(409, error.message);
      case 'forbidden':
        return standard(403, error.message);
      case 'limit_exceeded':
        return standard(400, error.message);
      case 'rate_limited':
        return { ...standard(429, error.message), headers: { 'retry-after': String((error as RateLimited).retryAfterSeconds) } };
    }
  }
  const fastifyError = error as Partial<FastifyError> | undefined;
  if (fastifyError?.validation) return standard(400, describeValidation(fastifyError as FastifyError));
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return standard(status, clientMessage(fastifyError as FastifyError));
  if (style === 'magic-link') return { status: 500, body: { status: 'ERROR', message: UNEXPECTED } };
  return { status: 500, body: { status: 'ERROR', code: '500', message: UNEXPECTED } };
}

/** "body/batchSize must be integer" → "batchSize must be integer"; names the field. */
function describeValidation(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return 'request is invalid';
  const where = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (first.keyword === 'required') return `${(first.params as { missingProperty: string }).missingProperty} is required`;
  if (first.keyword === 'additionalProperties') return `${where ? where + '.' : ''}${(first.params as { additionalProperty: string }).additionalProperty} is not allowed`;
  const subject = where || (error.validationContext === 'querystring' ? 'query' : 'body');
  return `${subject} ${first.message ?? 'is invalid'}`;
}

/** A fixed message per Fastify error: their own messages echo the request (URL, sizes). */
function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return 'Content-Type must be application/json';
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE': return 'Content-Type must be application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return 'request body is empty';
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return 'request body is not valid JSON';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return 'Content-Length does not match the body';
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_INVALID_URL': return 'request URL is not valid';
    case 'FST_ERR_MAX_PARAM_LENGTH': return 'request URL is too long';
    case 'LK_HEADER_OVERFLOW': return 'request headers are too large';
    case 'LK_MALFORMED_REQUEST': return 'request is malformed';
    case 'LK_REQUEST_TIMEOUT': return 'request took too long to arrive';
    default:
      // The JSON parser's SyntaxError (malformed text, __proto__ or constructor.prototype keys).
      if (error.statusCode === 400 && (error as unknown) instanceof SyntaxError) return 'request body is not valid JSON';
      return (STATUS_CODES[error.statusCode ?? 400] ?? 'Bad Request').toLowerCase();
  }
}


/** Installs the error and not-found handlers on the admin API scope. */
export function installAdminErrors(app: FastifyInstance): void {
  app.setErrorHandler((error, request: FastifyRequest, reply) => {
    const style = request.routeOptions.config?.adminErrors ?? 'standard';
    const wire = toWire(error, style, {
      customerId: request.customer?.id,
      username: typeof (request.body as { username?: unknown } | undefined)?.username === 'string'
        ? (request.body as { username: string }).username : undefined,
    });
    if (wire.status >= 500) logServerError(request.log, error);
    return sendWire(reply, wire);
  });
  app.setNotFoundHandler((request, reply) => {
    // The path is the caller's: echo a bounded part of it.
    const path = request.url.split('?')[0];
    return sendWire(reply, standard(404, `Route ${request.method} ${path.length > 100 ? `${path.slice(0, 100)}…` : path} not found`));
  });
}
