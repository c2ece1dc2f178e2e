/**
 * The face-neutral pieces of the error responses in the OpenAPI documents: the shapes
 * @fastify/swagger takes, the media-type helpers, and withErrorResponses, which each face's swagger
 * `transform` uses. The schemas of each face's bodies sit next to the face's errors:
 * identity/openapi-errors.ts (admin API) and site/openapi-errors.ts (content site).
 */

export type JsonSchema = Record<string, unknown>;
/** A response as @fastify/swagger takes it in a route schema: a description and a body per media type. */
export interface DocumentedResponse {
  description: string;
  content: Record<string, { schema: JsonSchema }>;
  headers?: Record<string, JsonSchema>;
}
export type Responses = Record<string, DocumentedResponse>;

export const string = { type: 'string' } as const;
export const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } };
export const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
export const text = (description: string) => ({ 'text/plain': { schema: { type: 'string', description } } });

/** Methods whose requests carry a body: they can also be refused for its size (413) or type (415). */
export const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';

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
