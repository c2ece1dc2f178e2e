/**
 * Reads the one credential a site request carries from its headers, before any verification: which
 * method it is for (provider token, JWT, API key, API token) and the raw secret. Rejects what no
 * method could accept with the spec's header errors (missing header, wrong scheme, SEGMENT_FAULT).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { SiteMethod } from '../../config.ts';
import { Unauthenticated } from '../../lib/errors.ts';
import { isBasicPair, parseBasicAuthorization } from './api-token.ts';
import { API_TOKEN_PREFIX, type ApiTokenCredential } from './principal.ts';

/** Which headers carry which method; a method that is off has no header here. */
export interface CredentialHeaders {
  /** Read `access_token` / `id_token`. */
  provider: boolean;
  /** Lower-case header name of JWTs, when the JWT method is on. */
  jwtHeader?: string;
  /** Lower-case header name of API keys, when the API-key method is on. */
  apiKeyHeader?: string;
  /** `Authorization: Basic …` and `Authorization: Bearer lkat_…`, when API tokens are on. */
  apiTokens: boolean;
}

export type Credential =
  | { method: 'provider'; kind: 'access_token' | 'id_token'; token: string }
  | { method: 'jwt'; token: string }
  | { method: 'apikey'; key: string }
  | { method: 'apitoken'; credential: ApiTokenCredential };

const API_TOKEN_BEARER_PREFIX = `${API_TOKEN_PREFIX}_`;
const INVALID_API_TOKEN = 'The provided API key is invalid.';

/** One header as a string: Node keeps the first Authorization and joins repeats of others with ", ". */
function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = headers[name];
  const value = Array.isArray(raw) ? raw.join(', ') : raw;
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  // An empty value is what a stripping proxy often leaves: the same as no header.
  return trimmed === '' ? undefined : trimmed;
}

/** `Scheme credentials` (RFC 9110 §11.4); a value without a space is a scheme alone. */
function splitScheme(value: string): { scheme: string; rest: string } {
  const space = value.search(/[ \t]/);
  if (space < 0) return { scheme: value, rest: '' };
  return { scheme: value.slice(0, space), rest: value.slice(space + 1).trim() };
}

/** "x-api-key" → "X-Api-Key", as error descriptions name headers. */
export function displayHeader(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, letter: string) => dash + letter.toUpperCase());
}

/** What a configuration's dispatch needs, worked out once: the headers to look at, and what their absence says. */
interface Dispatch {
  on: CredentialHeaders;
  /** The configured header names, in order of precedence, each once. */
  names: readonly string[];
  missingMethod: SiteMethod;
  missingMessage: string;
}

/**
 * The credential of a request, by DESIGN.md's dispatch: provider headers first, then the configured
 * header(s). A Bearer value with the API-token prefix is an API token, one with a dot a JWT, any
 * other an API key (or, with API keys off, a malformed JWT).
 *
 * The reader is made once per configuration: what depends only on it (header names, the "missing"
 * error) is worked out then, not per request.
 *
 * @throws Unauthenticated MISSING_AUTHORIZATION_HEADER, INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE,
 *   SEGMENT_FAULT, or INVALID_API_TOKEN (an unreadable Basic value), from the reader.
 */
export function credentialReader(on: CredentialHeaders): (headers: IncomingHttpHeaders) => Credential {
  const names = [...new Set([on.jwtHeader, on.apiKeyHeader, on.apiTokens ? 'authorization' : undefined]
    .filter((n): n is string => n !== undefined))];
  const expected = [...names.map(displayHeader), ...(on.provider ? ['access_token', 'id_token'] : [])];
  const dispatch: Dispatch = {
    on,
    names,
    missingMethod: on.jwtHeader ? 'jwt' : on.apiKeyHeader ? 'apikey' : on.provider ? 'provider' : 'apitoken',
    missingMessage: `${expected.join(' or ')} header is missing.`,
  };
  return (headers) => read(headers, dispatch);
}

function read(headers: IncomingHttpHeaders, { on, names, missingMethod, missingMessage }: Dispatch): Credential {
  if (on.provider) {
    for (const kind of ['access_token', 'id_token'] as const) {
      const value = headerValue(headers, kind);
      if (value === undefined) continue;
      const { scheme, rest } = splitScheme(value);
      // `access_token: <token>` as the spec shows; `access_token: Bearer <token>` is accepted too.
      if (rest === '') return { method: 'provider', kind, token: scheme };
      if (scheme.toLowerCase() !== 'bearer') {
        throw new Unauthenticated('INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'provider', `${kind} header token type must be Bearer.`);
      }
      return { method: 'provider', kind, token: rest };
    }
  }

  let name: string | undefined;
  let value: string | undefined;
  for (const candidate of names) {
    value = headerValue(headers, candidate);
    if (value !== undefined) { name = candidate; break; }
  }
  if (name === undefined || value === undefined) throw new Unauthenticated('MISSING_AUTHORIZATION_HEADER', missingMethod, missingMessage);

  const jwt = name === on.jwtHeader;
  const apiKey = name === on.apiKeyHeader;
  const apiToken = on.apiTokens && name === 'authorization';

  let token: string;
  const { scheme, rest } = splitScheme(value);
  // A custom header may carry the bare token; Authorization always names its scheme.
  if (rest === '' && name !== 'authorization') {
    token = scheme;
  } else {
    const lower = scheme.toLowerCase();
    if (lower === 'basic' && apiToken) {
      // Base64 of `username:secret` is an API token whatever the secret looks like (spec, Errors → Site
      // API, last paragraph): a wrong one is the API-token error. Only a Basic value that is no such pair
      // (a JWT, `Basic x`) is a credential of another method sent with the wrong scheme.
      const basic = parseBasicAuthorization(value);
      if (basic !== undefined) {
        return { method: 'apitoken', credential: { scheme: 'basic', username: basic.username, token: basic.secret } };
      }
      // A pair we cannot read (not UTF-8, control characters) holds no token we issued.
      if (isBasicPair(value)) throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', INVALID_API_TOKEN);
    }
    if (lower !== 'bearer') throw wrongTokenType(name, jwt, apiKey, on.provider);
    token = rest;
  }

  if (apiToken && token.startsWith(API_TOKEN_BEARER_PREFIX)) {
    return { method: 'apitoken', credential: { scheme: 'bearer', token } };
  }
  if (jwt && token.includes('.')) return { method: 'jwt', token };
  if (apiKey) return { method: 'apikey', key: token };
  if (jwt) throw new Unauthenticated('SEGMENT_FAULT', 'jwt', 'JWT format is incorrect.');
  throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', INVALID_API_TOKEN);
}

/**
 * The spec's wrong-token-type row for a header that does not say Bearer: 400 for the JWT (or, when
 * only API tokens share Authorization with it, the third-party method), 401 for API keys. With API
 * tokens the only method reading the header, there is no such row: the API-token error.
 */
function wrongTokenType(name: string, jwt: boolean, apiKey: boolean, provider: boolean): Unauthenticated {
  const method = jwt ? 'jwt' : apiKey ? 'apikey' : provider ? 'provider' : undefined;
  if (method === undefined) return new Unauthenticated('INVALID_API_TOKEN', 'apitoken', INVALID_API_TOKEN);
  return new Unauthenticated('INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', method, `${displayHeader(name)} header token type must be Bearer.`);
}
