/** JSON schemas shared by the applications, policies and OAuth-client routes (the OpenAPI document's source). */
import { MAX_URL_LENGTH, MAX_URLS_PER_LIST } from './urls.ts';

/** The admin API's standard error body (identity/errors.ts): validation 400, 401, 404, 409. */
export const errorResponse = {
  type: 'object',
  required: ['status', 'code', 'message'],
  properties: { status: { type: 'string', enum: ['ERROR'] }, code: { type: 'string' }, message: { type: 'string' } },
} as const;

/** Every status a signed extension route answers besides its 200; 404 and 409 where they apply. */
export const errorResponses = (...statuses: (404 | 409)[]) => ({
  400: { description: 'A field is missing or wrong; the message names it', ...errorResponse },
  401: { description: 'The request signature is wrong', ...errorResponse },
  ...Object.fromEntries(statuses.map((s) => [s, { description: s === 404 ? 'Not found for this customer' : 'Already exists', ...errorResponse }])),
});

export const uuidString = { type: 'string', minLength: 1, maxLength: 64, description: 'UUID' } as const;

export const urlList = (description: string) => ({
  type: 'array',
  maxItems: MAX_URLS_PER_LIST,
  description: `${description}. Absolute http:// or https:// URLs, at most ${MAX_URL_LENGTH} characters, without whitespace, semicolons, commas, user information or fragment.`,
  items: { type: 'string', maxLength: MAX_URL_LENGTH },
}) as const;

export const successResponse = (properties: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  required: ['status', ...required],
  properties: { status: { type: 'string', enum: ['SUCCESS'] }, ...properties },
}) as const;

export const deletedResponse = successResponse({ message: { type: 'string' } }, ['message']);
