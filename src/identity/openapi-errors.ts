/**
 * The admin API's error responses in the OpenAPI document, with their body schemas: the identity
 * face's swagger `transform` adds them to every /api operation, from the route's error style
 * (`config.adminErrors`) and method. The bodies themselves are written in errors.ts; the schemas
 * here describe those bodies. A status the route documents itself is kept as the route wrote it.
 */
import { hasBody, json, RETRY_AFTER, string, text, type DocumentedResponse, type JsonSchema, type Responses } from '../http/openapi-errors.ts';
import type { AdminErrorStyle } from './errors.ts';

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
