/**
 * The error responses of every operation in the OpenAPI documents, with their body schemas: each
 * face's swagger `transform` adds them to a route's documented responses, from the route's error
 * style (admin: `config.adminErrors`) or protection (site: `config.siteAuth`), its method and path.
 * The bodies themselves are written in identity/errors.ts and site/errors.ts; the schemas here
 * describe those bodies. A status the route documents itself is kept as the route wrote it.
 */
import type { AdminErrorStyle } from '../identity/errors.ts';

type JsonSchema = Record<string, unknown>;
/** A response as @fastify/swagger takes it in a route schema: a description and a body per media type. */
interface DocumentedResponse {
  description: string;
  content: Record<string, { schema: JsonSchema }>;
  headers?: Record<string, JsonSchema>;
}
type Responses = Record<string, DocumentedResponse>;

const string = { type: 'string' } as const;
const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } };
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const text = (description: string) => ({ 'text/plain': { schema: { type: 'string', description } } });

// ---- Admin API (identity face): the bodies of identity/errors.ts -------------------------------

/** The admin API's standard error body. */
export const adminErrorSchema: JsonSchema = {
  type: 'object',
  required: ['status', 'code', 'message'],
  properties: {
    status: { type: 'string', description: '"ERROR" ("error" on change-password\'s 401)' },
    code: { type: 'string', description: 'The HTTP status, as a string' },
    message: string,
  },
};
const changePasswordErrorSchema: JsonSchema = {
  type: 'object',
  required: ['customerId', 'status', 'message'],
  properties: { customerId: { type: 'integer' }, status: { type: 'string', const: 'ERROR' }, message: string },
};
const getUserNotFoundSchema: JsonSchema = {
  type: 'object',
  required: ['username', 'status', 'message'],
  properties: { username: string, status: { type: 'string', const: 'FAILED' }, message: string },
};
const failedSchema: JsonSchema = {
  type: 'object',
  required: ['status', 'message'],
  properties: { status: { type: 'string', const: 'FAILED' }, message: string },
};
const magicLinkNotFoundSchema: JsonSchema = {
  type: 'object',
  required: ['status', 'statusCode', 'message'],
  properties: { status: { type: 'string', const: 'ERROR' }, statusCode: { type: 'integer' }, message: string },
};
const magicLinkUnexpectedSchema: JsonSchema = {
  type: 'object',
  required: ['status', 'message'],
  properties: { status: { type: 'string', const: 'ERROR' }, message: string },
};

const adminJson = (description: string, schema: JsonSchema = adminErrorSchema): DocumentedResponse => ({ description, content: json(schema) });

/** Methods whose requests carry a body: they can also be refused for its size (413) or type (415). */
const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';

/** The error responses a signed admin route of `style` can give. */
export function adminErrorResponses(style: AdminErrorStyle, method: string): Responses {
  const responses: Responses = {
    400: adminJson('The request is invalid: a field is missing, of the wrong type or refused; the message names it.'),
    401: adminJson('The signature (Customer-Key, Timestamp, Authorization) is missing, wrong or too old.'),
    404: adminJson('What the request names does not exist.'),
    429: { ...adminJson('Too many requests from this address; Retry-After says when to try again.'), headers: RETRY_AFTER },
    500: adminJson('An unexpected error; the message carries no detail.'),
    // Every style alike: the spec has no 503 variants (identity/errors.ts).
    503: { ...adminJson('The database (or Redis, when configured) cannot be reached: nothing was done; Retry-After says when to try again.'), headers: RETRY_AFTER },
  };
  if (hasBody(method)) {
    responses[409] = adminJson('It conflicts with what exists (a name or e-mail already taken).');
    responses[413] = adminJson('The request body is too large.');
    responses[415] = adminJson('The request body is not application/json.');
  }
  switch (style) {
    case 'disable-enable':
      delete responses[401];
      delete responses[404];
      responses[400] = {
        description: 'A wrong signature (text) or an invalid request (JSON).',
        content: { ...text('API Authorization: API Request denied: Incorrect Authorization header.'), ...json(adminErrorSchema) },
      };
      responses[403] = { description: 'The user does not exist.', content: text('The user does not exist.') };
      break;
    case 'delete-user':
      delete responses[400];
      delete responses[404];
      responses[403] = {
        description: 'The user does not exist, or the request body is not correct.',
        content: text('You are not authorized to perform this operation.'),
      };
      break;
    case 'change-password':
      delete responses[404];
      responses[400] = {
        description: 'The user does not exist or the new password is refused (customerId body); a malformed request (standard body).',
        content: json({ oneOf: [changePasswordErrorSchema, adminErrorSchema] }),
      };
      break;
    case 'get-user':
      responses[404] = adminJson('The user does not exist.', getUserNotFoundSchema);
      break;
    case 'mfa':
      responses[400] = adminJson('The code is wrong (FAILED body), or the request is invalid (standard body).', { oneOf: [failedSchema, adminErrorSchema] });
      responses[404] = adminJson('The user does not exist.', failedSchema);
      break;
    case 'magic-link':
      responses[404] = adminJson('The username does not exist.', magicLinkNotFoundSchema);
      responses[500] = adminJson('An unexpected error; the message carries no detail.', magicLinkUnexpectedSchema);
      break;
    case 'standard':
      break;
  }
  return responses;
}

// ---- Content site: the bodies of site/errors.ts --------------------------------------------------

/** The site's error body (the spec's site table). */
export const siteErrorSchema: JsonSchema = {
  type: 'object',
  required: ['status', 'error', 'code', 'error_description'],
  properties: {
    status: { type: 'string', const: 'error' },
    error: { type: 'string', description: 'e.g. INVALID_CREDENTIALS, SEGMENT_FAULT, INVALID_SIGNATURE, MISSING_AUTHORIZATION_HEADER, INVALID_TOKEN, INVALID_API_KEY, BAD_REQUEST, FORBIDDEN, NOT_FOUND, TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE' },
    code: { type: 'string', description: 'The HTTP status, as a string' },
    error_description: string,
  },
};

/** The API-token failure body (/rest/api/2/*). */
export const apiTokenErrorSchema: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['status', 'message'],
      properties: { status: { type: 'string', const: 'ERROR' }, message: string },
    },
  },
};

const siteJson = (description: string, schema: JsonSchema = siteErrorSchema): DocumentedResponse => ({ description, content: json(schema) });

export interface SiteRouteFacts {
  method: string;
  url: string;
  /** False for routes open to anyone (the token endpoint, the JWKS) or that check credentials themselves. */
  protectedRoute: boolean;
}

/** The error responses a content-site route can give. */
export function siteErrorResponses(route: SiteRouteFacts): Responses {
  const apiTokenRoute = route.url.startsWith('/rest/api/2/');
  const responses: Responses = {
    400: siteJson('The request is malformed or invalid (BAD_REQUEST); for a credential, the token is malformed or of the wrong type.'),
    500: siteJson('An unexpected error (INTERNAL_SERVER_ERROR); no detail.'),
    503: { ...siteJson('The database (or Redis, when configured) cannot be reached, or the site is not bound to a customer (SERVICE_UNAVAILABLE); Retry-After says when to try again.'), headers: RETRY_AFTER },
  };
  if (route.protectedRoute || apiTokenRoute) {
    responses[401] = apiTokenRoute
      ? siteJson('No credential, or one that is refused: the site body, or the API-token body for API tokens.', { oneOf: [siteErrorSchema, apiTokenErrorSchema] })
      : siteJson('No credential, or one that is refused (MISSING_AUTHORIZATION_HEADER, INVALID_SIGNATURE, INVALID_API_KEY, …).');
    responses[403] = siteJson('The credential is valid but may not do this (FORBIDDEN).');
  }
  // A path parameter names something that may not exist (Fastify writes them :id, OpenAPI {id}).
  if (/[:{]/.test(route.url)) responses[404] = siteJson('No such resource (NOT_FOUND).');
  if (route.url.startsWith('/cms-json/') || apiTokenRoute) {
    responses[429] = { ...siteJson('Too many requests or failed logins (TOO_MANY_REQUESTS); Retry-After says when to try again.'), headers: RETRY_AFTER };
  }
  if (hasBody(route.method)) {
    if (route.protectedRoute || apiTokenRoute) responses[409] = siteJson('It conflicts with what exists (CONFLICT).');
    responses[413] = siteJson('The request body is too large (PAYLOAD_TOO_LARGE).');
    responses[415] = siteJson('The request body\'s media type is not accepted (UNSUPPORTED_MEDIA_TYPE).');
  }
  return responses;
}

/** The token endpoint's request body, in each of the three forms it accepts. */
export function tokenRequestBody(): { content: Record<string, { schema: JsonSchema }> } {
  const schema: JsonSchema = {
    type: 'object',
    required: ['username', 'password'],
    properties: {
      username: { type: 'string', maxLength: 256, description: 'The username or e-mail address' },
      password: { type: 'string', maxLength: 1024 },
      otp: { type: 'string', maxLength: 16, description: 'The authenticator-app code, for users who enrolled one' },
    },
  };
  return { content: { 'application/x-www-form-urlencoded': { schema }, 'multipart/form-data': { schema }, 'application/json': { schema } } };
}

/**
 * `schema` with `errors` added to its documented responses; statuses the route documents itself
 * stay as written.
 */
export function withErrorResponses<S extends object>(schema: S | undefined, errors: Responses): S {
  const own = ((schema as { response?: Record<string, unknown> } | undefined)?.response ?? {});
  const response: Record<string, unknown> = { ...errors };
  // Without a response schema the document would show a default 200; adding errors must keep one.
  if (!Object.keys(own).some((status) => status.startsWith('2'))) response[200] = { description: 'Default Response' };
  for (const [status, value] of Object.entries(own)) response[status] = value;
  return { ...(schema ?? {}), response } as unknown as S;
}
