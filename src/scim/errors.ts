/**
 * The SCIM face's wire error bodies, written here and nowhere else (RFC 7644 §3.12): `schemas` the
 * Error URN, `status` as a string, `scimType` where the RFC names one, `detail`. Domain errors name
 * the service's fields; the detail names the SCIM attribute instead (firstName -> name.givenName).
 * identity/errors.ts installs this as the /scim/v2 scope's row of the face's table.
 */
import type { FastifyError } from 'fastify';
import type { WireError } from '../http/app.ts';
import { asServiceUnavailable, Conflict, Immutable, Invalid, LatchkeyError, NotFound, RateLimited } from '../lib/errors.ts';

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** RFC 7644 §3.12, Table 9. */
export type ScimType =
  | 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax'
  | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

/** An answer the SCIM face gives in the RFC's words (a bad filter, path or PATCH body; a missing token). */
export class ScimError extends Error {
  constructor(readonly status: number, readonly scimType: ScimType | undefined, detail: string) {
    super(detail);
  }
}

export const UNAUTHENTICATED_DETAIL = 'A valid SCIM bearer token is required (Authorization: Bearer <token>).';

/** The service's field names as SCIM spells the attribute. */
const ATTRIBUTE_OF_FIELD: Record<string, string> = {
  username: 'userName',
  email: 'emails',
  firstName: 'name.givenName',
  lastName: 'name.familyName',
  phone: 'phoneNumbers',
  password: 'password',
  externalId: 'externalId',
  groupName: 'displayName',
  group: 'Group',
  members: 'members',
};

/** `message` ("<field> <reason>") with the field spelled as SCIM spells it. */
function inScimWords(field: string | undefined, message: string): string {
  if (!field) return message;
  const attribute = ATTRIBUTE_OF_FIELD[field] ?? field;
  // "a user with this email already exists" names no field first: the attribute is put before it.
  return message.startsWith(field) ? `${attribute}${message.slice(field.length)}` : `${attribute}: ${message}`;
}

export function scimBody(status: number, scimType: ScimType | undefined, detail: string): Record<string, unknown> {
  return { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

const wire = (status: number, scimType: ScimType | undefined, detail: string, headers: Record<string, string> = {}): WireError =>
  ({ status, type: SCIM_CONTENT_TYPE, headers, body: scimBody(status, scimType, detail) });

/** A fixed detail per Fastify error: their own messages echo the request. */
function fastifyDetail(error: FastifyError): { scimType?: ScimType; detail: string } {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return { detail: 'request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE': return { detail: 'Content-Type must be application/scim+json or application/json' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return { scimType: 'invalidSyntax', detail: 'request body is empty' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return { scimType: 'invalidSyntax', detail: 'request body is not valid JSON' };
    default:
      if ((error as unknown) instanceof SyntaxError) return { scimType: 'invalidSyntax', detail: 'request body is not valid JSON' };
      return { detail: 'the request is malformed' };
  }
}

/** Any error as the RFC 7644 body. Unknown errors never leak detail (the caller logs them). */
export function toScimWire(error: unknown): WireError {
  if (error instanceof ScimError) {
    return wire(error.status, error.scimType, error.message, error.status === 401 ? { 'www-authenticate': 'Bearer realm="SCIM"' } : {});
  }
  const unavailable = asServiceUnavailable(error);
  if (unavailable) return wire(503, undefined, unavailable.message, { 'retry-after': String(unavailable.retryAfterSeconds) });
  if (error instanceof Immutable) return wire(400, 'mutability', inScimWords(error.field, error.message));
  if (error instanceof Invalid) return wire(400, 'invalidValue', inScimWords(error.field, error.message));
  if (error instanceof Conflict) return wire(409, 'uniqueness', inScimWords(error.fields.field, error.message));
  if (error instanceof NotFound) return wire(404, undefined, error.entity === 'group' ? 'The group does not exist.' : 'The user does not exist.');
  if (error instanceof RateLimited) return wire(429, undefined, error.message, { 'retry-after': String(error.retryAfterSeconds) });
  if (error instanceof LatchkeyError) {
    if (error.code === 'unauthenticated') return wire(401, undefined, UNAUTHENTICATED_DETAIL, { 'www-authenticate': 'Bearer realm="SCIM"' });
    if (error.code === 'forbidden') return wire(403, undefined, error.message);
    return wire(400, 'invalidValue', error.message);
  }
  const fastifyError = error as Partial<FastifyError> | undefined;
  if (fastifyError?.validation) return wire(400, 'invalidSyntax', 'the request does not match its schema');
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const { scimType, detail } = fastifyDetail(fastifyError as FastifyError);
    return wire(status, scimType, detail);
  }
  return wire(500, undefined, 'An unexpected error occurred.');
}

/** The answer for a path under /scim/v2 that names no endpoint. */
export const scimRouteNotFound = (): WireError => wire(404, undefined, 'No SCIM endpoint at this path.');
