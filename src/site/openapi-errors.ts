/**
 * The content site's error responses in its OpenAPI document, with their body schemas: the site's
 * swagger `transform` adds them to every operation, from the route's protection (`config.siteAuth`),
 * method and path. The bodies themselves are written in errors.ts; the schemas here describe them.
 */
import { hasBody, json, RETRY_AFTER, string, type DocumentedResponse, type JsonSchema, type Responses } from '../http/openapi-errors.ts';

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
