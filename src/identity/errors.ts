/**
 * The identity face's wire error bodies, written here and nowhere else: one table, by style. The
 * admin API's routes name their variant in `config.adminErrors` (the spec gives some routes their own
 * unauthorised or not-found bodies); the parts outside /api (POST /oauth/token, the magic-link
 * landing, the providers' mount, the console) each have their row, installed on their scope.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { logServerError, sendWire, type WireError } from '../http/app.ts';
import {
  asServiceUnavailable, Conflict, Invalid, LatchkeyError, MfaFailed, NotFound, RateLimited, USER_NOT_FOUND_MESSAGE,
} from '../lib/errors.ts';
import { toScimWire } from '../scim/errors.ts';
import { securityHeaders } from './hosted-pages/layout.ts';
import { badRequestPage, errorPage, unavailablePage as landingUnavailablePage } from './magic-links/landing/pages.ts';
import { badSignInRequestPage, signInErrorPage, signInUnavailablePage, tooManyAttemptsPage } from './sign-in/pages.ts';
import { badResetRequestPage, resetErrorPage, resetRateLimitedPage, resetUnavailablePage } from './password-resets/pages.ts';
import { noStorePage, PROVIDER_HEADERS, unavailableBody, unavailablePage as providerUnavailablePage } from './oidc/pages.ts';

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

/** Facts of the request that some bodies echo (customerId, username) or are shaped by. */
export interface ErrorContext {
  customerId?: number;
  username?: string;
  /** The providers' mount: the client is a browser (Accept prefers HTML). */
  prefersHtml?: boolean;
  /** The console: its page around a title and one message (the request's layout and CSRF token). */
  page?: (title: string, message: string) => string;
}

/**
 * The identity face's parts outside the admin API; each answers in its own shape. 'interaction' is
 * the providers' interaction once it has hijacked the reply (it writes the answer itself).
 */
export type PartErrorStyle = 'oauth-token' | 'landing' | 'provider' | 'interaction' | 'console' | 'password-reset' | 'sign-in' | 'scim';

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
export function toWire(error: unknown, style: AdminErrorStyle | PartErrorStyle, ctx: ErrorContext = {}): WireError {
  switch (style) {
    case 'oauth-token': return oauthTokenWire(error);
    case 'landing': return pagesWire(error, LANDING_PAGES);
    case 'password-reset': return pagesWire(error, PASSWORD_RESET_PAGES);
    case 'sign-in': return pagesWire(error, SIGN_IN_PAGES);
    case 'provider': return providerWire(error, ctx);
    case 'interaction': return interactionWire(error);
    case 'console': return consoleWire(error, ctx);
    // SCIM 2.0 (/scim/v2): RFC 7644's error body, built in scim/errors.ts.
    case 'scim': return toScimWire(error);
  }
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

// ---- Outside /api ------------------------------------------------------------------------------

/** RFC 6749 §5.2's error codes, as POST /oauth/token uses them. */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

/** A §5.2 error; invalid_client is 401 with a Basic challenge (§5.2: the client may have used Basic). */
export class OAuthError extends Error {
  constructor(readonly error: OAuthErrorCode, readonly description: string) {
    super(description);
  }
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
const JSON_TYPE = 'application/json; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';

const isClientError = (error: unknown): number | undefined => {
  const status = (error as { statusCode?: number } | undefined)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
};

function oauthError(error: OAuthErrorCode, description: string): WireError {
  return {
    status: error === 'invalid_client' ? 401 : 400,
    headers: error === 'invalid_client' ? { 'www-authenticate': 'Basic realm="latchkey", charset="UTF-8"', ...NO_STORE } : NO_STORE,
    type: JSON_TYPE,
    body: { error, error_description: description },
  };
}

/** POST /oauth/token: RFC 6749 §5.2 bodies, every answer no-store. */
function oauthTokenWire(error: unknown): WireError {
  if (error instanceof OAuthError) return oauthError(error.error, error.description);
  // Over the address's request budget (http/rate-limit.ts set Retry-After): §5.2 has no code for it.
  if (error instanceof RateLimited) return { status: 429, headers: NO_STORE, body: { error: 'temporarily_unavailable', error_description: error.message } };
  // A body over the face's limit is a 413 here too (docs/operations.md), in §5.2's shape: §5.2 has no
  // code of its own for it. Fastify has already set Connection: close (the rest is read and dropped).
  const clientStatus = isClientError(error);
  if (clientStatus === 413) return { ...oauthError('invalid_request', 'request body is too large'), status: 413 };
  if (clientStatus !== undefined) return oauthError('invalid_request', 'the request is malformed');
  if ((error as { code?: string } | undefined)?.code === 'invalid') return oauthError('invalid_request', 'the request is malformed');
  // The database (or Redis) is down: no token without checking the client. RFC 6749 names this
  // condition temporarily_unavailable (§4.1.2.1); §5.2's body shape, 503 with Retry-After.
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    return {
      status: 503,
      headers: { ...NO_STORE, 'retry-after': String(unavailable.retryAfterSeconds) },
      body: { error: 'temporarily_unavailable', error_description: unavailable.message },
    };
  }
  return { status: 500, headers: { 'cache-control': 'no-store' }, body: { error: 'server_error', error_description: UNEXPECTED } };
}

/** What a part made of person-facing pages answers for each kind of error (never JSON, never a redirect). */
interface ErrorPages {
  badRequest(): string;
  unavailable(retryAfterSeconds: number): string;
  unexpected(): string;
  /** Over a throttle or rate limit; without it, a refusal is the bad-request page with its status. */
  tooMany?(retryAfterSeconds: number): string;
}

/** The magic-link landing: bad input is the "open the link again" page. */
const LANDING_PAGES: ErrorPages = { badRequest: badRequestPage, unavailable: landingUnavailablePage, unexpected: errorPage };
/** The forgotten-password pages; 429 over the landing family's per-address budget. */
const PASSWORD_RESET_PAGES: ErrorPages = {
  badRequest: badResetRequestPage, unavailable: resetUnavailablePage, unexpected: resetErrorPage, tooMany: resetRateLimitedPage,
};
/** The hosted sign-in pages and <issuer>/jwt/authorize; 429 over the login throttle. */
const SIGN_IN_PAGES: ErrorPages = {
  badRequest: () => badSignInRequestPage('The request could not be read.'),
  unavailable: signInUnavailablePage,
  unexpected: signInErrorPage,
  tooMany: tooManyAttemptsPage,
};

function pagesWire(error: unknown, pages: ErrorPages): WireError {
  const page = (status: number, body: string, headers: Record<string, string> = {}): WireError =>
    ({ status, headers: { ...headers, ...securityHeaders() }, type: HTML_TYPE, body });
  if (pages.tooMany && error instanceof RateLimited) {
    return page(429, pages.tooMany(error.retryAfterSeconds), { 'retry-after': String(error.retryAfterSeconds) });
  }
  const status = isClientError(error);
  if (status !== undefined || (error as { code?: string } | undefined)?.code === Invalid.code) return page(status ?? 400, pages.badRequest());
  // The database or Redis is down: refused (fail closed) and said so, with when to retry.
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    return page(503, pages.unavailable(unavailable.retryAfterSeconds), { 'retry-after': String(unavailable.retryAfterSeconds) });
  }
  return page(500, pages.unexpected());
}

/**
 * The providers' mount, before the provider has the request: an outage is answered as the provider
 * answers it (oidc/provider.ts), a page for browsers and the OAuth JSON error for the rest; any other
 * error as the rest of the face (the standard body).
 */
function providerWire(error: unknown, ctx: ErrorContext): WireError {
  const unavailable = asServiceUnavailable(error);
  if (!unavailable) return toWire(error, 'standard');
  const headers = { ...PROVIDER_HEADERS, 'retry-after': String(unavailable.retryAfterSeconds) };
  return ctx.prefersHtml
    ? { status: 503, headers, type: HTML_TYPE, body: providerUnavailablePage(unavailable.retryAfterSeconds) }
    : { status: 503, headers, type: JSON_TYPE, body: unavailableBody(unavailable.message) };
}

/** The interaction, after the provider was handed the login (hijacked): a page, never JSON. */
function interactionWire(error: unknown): WireError {
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    return { status: 503, headers: { 'retry-after': String(unavailable.retryAfterSeconds) }, type: HTML_TYPE, body: providerUnavailablePage(unavailable.retryAfterSeconds) };
  }
  return { status: 500, type: HTML_TYPE, body: noStorePage('Sign-in failed', ['The sign-in could not be completed. Start again from the application.']) };
}

/** The console: a page with a title and one message; `ctx.page` lays it out. */
function consoleWire(error: unknown, ctx: ErrorContext): WireError {
  const page = (status: number, title: string, text: string, headers?: Record<string, string>): WireError =>
    ({ status, ...(headers ? { headers } : {}), type: HTML_TYPE, body: ctx.page ? ctx.page(title, text) : text });
  const code = (error as { code?: string } | undefined)?.code;
  if (code === 'FST_CSRF_MISSING_SECRET' || code === 'FST_CSRF_INVALID_TOKEN') {
    return page(403, 'Form refused', 'This form was not accepted: it has expired or did not come from this console. Go back, reload the page and try again.');
  }
  // The database (or Redis) is down: refused, never served unchecked; the page says when to retry.
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    return page(503, 'Temporarily unavailable', `The console cannot reach the data it needs right now. Try again in ${unavailable.retryAfterSeconds} seconds.`,
      { 'retry-after': String(unavailable.retryAfterSeconds) });
  }
  if (error instanceof RateLimited) {
    return page(429, 'Too many attempts', `Try again in ${error.retryAfterSeconds} seconds.`, { 'retry-after': String(error.retryAfterSeconds) });
  }
  if (error instanceof NotFound) return page(404, 'Not found', `The ${error.entity} was not found; it may have been deleted.`);
  if (error instanceof Invalid || error instanceof Conflict) return page(error instanceof Invalid ? 400 : 409, 'Not saved', error.message);
  if (error instanceof LatchkeyError) return page(400, 'Not saved', error.message);
  const status = isClientError(error);
  if (status !== undefined) return page(status, 'Bad request', 'The request was not understood.');
  return page(500, 'Something went wrong', 'The console could not finish this request. Nothing secret was logged; the request id is in the logs.');
}

/** An error handler answering from `style`'s row of the table; 5xx answers are logged with the error. */
function errorHandler(
  styleOf: (request: FastifyRequest) => AdminErrorStyle | PartErrorStyle,
  contextOf: (request: FastifyRequest, reply: FastifyReply) => ErrorContext,
) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const wire = toWire(error, styleOf(request), contextOf(request, reply));
    if (wire.status >= 500) logServerError(request.log, error);
    return sendWire(reply, wire);
  };
}

/** Installs the error handler of a part outside /api on its scope. */
export function installPartErrors(
  app: FastifyInstance,
  style: PartErrorStyle,
  contextOf: (request: FastifyRequest, reply: FastifyReply) => ErrorContext = () => ({}),
): void {
  app.setErrorHandler(errorHandler(() => style, contextOf));
}

/** Installs the error and not-found handlers on the admin API scope. */
export function installAdminErrors(app: FastifyInstance): void {
  app.setErrorHandler(errorHandler(
    (request) => request.routeOptions.config?.adminErrors ?? 'standard',
    (request) => ({
      customerId: request.customer?.id,
      username: typeof (request.body as { username?: unknown } | undefined)?.username === 'string'
        ? (request.body as { username: string }).username : undefined,
    }),
  ));
  app.setNotFoundHandler((request, reply) => {
    // The path is the caller's: echo a bounded part of it.
    const path = request.url.split('?')[0];
    return sendWire(reply, standard(404, `Route ${request.method} ${path.length > 100 ? `${path.slice(0, 100)}…` : path} not found`));
  });
}
