/**
 * The content site's wire error bodies, written here and nowhere else: the spec's site table
 * (`status:"error"`, `error`, `code` as a string, `error_description`) with its HTTP statuses, and the
 * API-token body. Verifiers and services throw domain errors; this file picks status and body.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { isMalformedMultipart, logServerError, sendWire } from '../http/app.ts';
import { asServiceUnavailable, LatchkeyError, RateLimited, Unauthenticated } from '../lib/errors.ts';

export interface SiteWireError {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Errors of the spec's site table, then the statuses the spec leaves to us. */
export type SiteErrorName =
  | 'INVALID_CREDENTIALS'
  | 'BAD_REQUEST'
  | 'SEGMENT_FAULT'
  | 'INVALID_SIGNATURE'
  | 'MISSING_AUTHORIZATION_HEADER'
  | 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE'
  | 'INVALID_TOKEN'
  | 'INVALID_API_KEY'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_ACCEPTABLE'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'REQUEST_HEADER_FIELDS_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL_SERVER_ERROR'
  | 'SERVICE_UNAVAILABLE';

export const UNEXPECTED = 'An unexpected error occurred.';
/** The API-token failure text (spec: "the provided API key is invalid"). */
export const INVALID_API_TOKEN_MESSAGE = 'The provided API key is invalid.';

/** What each authentication failure says when the verifier gave no description of its own. */
const DEFAULT_DESCRIPTIONS: Record<string, string> = {
  INVALID_CREDENTIALS: 'Invalid username or password.',
  SEGMENT_FAULT: 'JWT format is incorrect.',
  INVALID_SIGNATURE: 'JWT signature is invalid.',
  MISSING_AUTHORIZATION_HEADER: 'Authorization header is missing.',
  INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE: 'Authorization header token type must be Bearer.',
  INVALID_TOKEN: 'Token is invalid or expired.',
  INVALID_API_KEY: 'API key is invalid or expired.',
};

/** The spec's site body. */
export function siteError(status: number, error: SiteErrorName, description: string, headers?: Record<string, string>): SiteWireError {
  return { status, body: { status: 'error', error, code: String(status), error_description: description }, ...(headers ? { headers } : {}) };
}

// RFC 6750 §3: a 401 names the scheme the client should use.
const CHALLENGE = { 'www-authenticate': 'Bearer realm="site"' };

function unauthenticated(error: Unauthenticated): SiteWireError {
  // Issue 5 / spec "Errors → Site API": API tokens answer in their own (Jira-style) shape.
  if (error.reason === 'INVALID_API_TOKEN' || error.method === 'apitoken') {
    return { status: 401, body: { error: { status: 'ERROR', message: INVALID_API_TOKEN_MESSAGE } } };
  }
  const description = error.message && error.message !== 'Unauthenticated'
    ? error.message
    : DEFAULT_DESCRIPTIONS[error.reason] ?? 'Authentication failed.';
  switch (error.reason) {
    case 'INVALID_CREDENTIALS':
    case 'SEGMENT_FAULT':
    case 'INVALID_TOKEN':
      return siteError(400, error.reason, description);
    case 'INVALID_SIGNATURE':
    case 'MISSING_AUTHORIZATION_HEADER':
    case 'INVALID_API_KEY':
      return siteError(401, error.reason, description, CHALLENGE);
    case 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE':
      // The spec gives this error 401 for API keys and 400 for JWTs and provider tokens.
      return error.method === 'apikey'
        ? siteError(401, error.reason, description, CHALLENGE)
        : siteError(400, error.reason, description);
    default:
      return siteError(401, 'UNAUTHORIZED', description, CHALLENGE);
  }
}

const NAMES_BY_STATUS: Record<number, SiteErrorName> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  431: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
};

/** Any error as the site's wire body. Unknown errors never carry detail. */
export function toWire(error: unknown): SiteWireError {
  const unavailable = asServiceUnavailable(error);
  if (unavailable) return siteError(503, 'SERVICE_UNAVAILABLE', unavailable.message, { 'retry-after': String(unavailable.retryAfterSeconds) });
  if (error instanceof Unauthenticated) return unauthenticated(error);
  if (error instanceof LatchkeyError) {
    switch (error.code) {
      case 'invalid':
      case 'limit_exceeded':
      case 'mfa_failed':
        return siteError(400, 'BAD_REQUEST', error.message);
      case 'not_found':
        return siteError(404, 'NOT_FOUND', error.message);
      case 'conflict':
        return siteError(409, 'CONFLICT', error.message);
      case 'forbidden':
        return siteError(403, 'FORBIDDEN', error.message);
      case 'rate_limited': {
        const seconds = Math.max(1, Math.ceil((error as RateLimited).retryAfterSeconds));
        return siteError(429, 'TOO_MANY_REQUESTS', error.message, { 'retry-after': String(seconds) });
      }
    }
  }
  const fastifyError = error as Partial<FastifyError> | undefined;
  if (fastifyError?.validation) return siteError(400, 'BAD_REQUEST', describeValidation(fastifyError as FastifyError));
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return siteError(status, NAMES_BY_STATUS[status] ?? 'BAD_REQUEST', clientMessage(fastifyError as FastifyError));
  }
  return siteError(500, 'INTERNAL_SERVER_ERROR', UNEXPECTED);
}

/** "body/title must be string" → "title must be string": names the field. */
function describeValidation(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return 'request is invalid';
  const where = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (first.keyword === 'required') return `${(first.params as { missingProperty: string }).missingProperty} is required`;
  if (first.keyword === 'additionalProperties') {
    return `${where ? where + '.' : ''}${(first.params as { additionalProperty: string }).additionalProperty} is not allowed`;
  }
  const subject = where || (error.validationContext === 'querystring' ? 'query'
    : error.validationContext === 'params' ? 'path' : 'body');
  return `${subject} ${first.message ?? 'is invalid'}`;
}

function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return 'Content-Type is not supported';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return 'request body is empty';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return 'Content-Length does not match the body';
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
    case 'FST_REQ_FILE_TOO_LARGE': return 'multipart body has too many or too large parts (fields only)';
    case 'FST_PROTO_VIOLATION': return 'field name is not allowed';
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE': return 'request is not multipart';
    case 'FST_INVALID_JSON_FIELD_ERROR': return 'a multipart field is not valid JSON';
    case 'FST_MP_PREMATURE_CLOSE': return 'request ended before the multipart body did';
    case 'FST_ERR_BAD_URL': return 'URL is malformed';
    case 'LK_HEADER_OVERFLOW': return 'request headers are too large';
    case 'LK_MALFORMED_REQUEST': return 'request is malformed';
    case 'LK_REQUEST_TIMEOUT': return 'request took too long to arrive';
    default:
      // Fastify's JSON parse errors (malformed JSON, __proto__ keys) are 400s with a safe message.
      if (error.statusCode === 400) return 'request is malformed';
      return error.statusCode === 404 ? 'not found' : 'request cannot be processed';
  }
}

/** Sends a site error body (always JSON). */
export function send(reply: FastifyReply, wire: SiteWireError): FastifyReply {
  return sendWire(reply, wire);
}

/** Installs the site's error and not-found handlers. */
export function installSiteErrors(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    // busboy's errors (no boundary, a form cut short) are plain Errors: the client's bytes, not ours.
    const wire = isMalformedMultipart(request, error) ? siteError(400, 'BAD_REQUEST', 'multipart body is malformed') : toWire(error);
    if (wire.status >= 500) logServerError(request.log, error);
    return send(reply, wire);
  });
  // The path is not echoed: it is attacker-chosen text of any length.
  app.setNotFoundHandler((_request, reply) => {
    send(reply, siteError(404, 'NOT_FOUND', 'No such route.'));
  });
}
