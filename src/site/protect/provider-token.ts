/**
 * Checks third-party OpenID provider tokens from the site's `access_token` and `id_token` headers: access
 * tokens by introspection (RFC 7662) or user-info, ID tokens by signature against the provider's JWKS.
 * Rejects anything it cannot confirm (provider down, slow, odd answers) with INVALID_TOKEN: fail closed.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, customFetch, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import type { SiteConfig } from '../../config.ts';
import type { Clock } from '../../lib/clock.ts';
import { Unauthenticated } from '../../lib/errors.ts';

export type ProviderTokenKind = 'access_token' | 'id_token';

/**
 * Who a provider token belongs to: `user` is the configured user claim as the provider spelled it, `claims`
 * everything the provider said. Frozen: the same object is served from the cache.
 */
export interface ProviderUser {
  user: string;
  claims: Record<string, unknown>;
}

export interface ProviderVerifier {
  /**
   * Checks a token with the provider (or the cache of recent successes).
   *
   * @throws Unauthenticated `INVALID_TOKEN` (method `provider`) for every failure, including an
   *   unreachable, slow or misbehaving provider; never another error.
   */
  verify(kind: ProviderTokenKind, token: string): Promise<ProviderUser>;
}

export type ProviderVerifierOptions = SiteConfig['provider'] & {
  clock: Clock;
  /** Used for every call to the provider (discovery, JWKS, introspection, user-info); defaults to global fetch. */
  fetch?: typeof fetch;
};

/** Longer header values are refused before any call to the provider. */
export const MAX_PROVIDER_TOKEN_LENGTH = 8 * 1024;
const MAX_CACHE_ENTRIES = 10_000;
const MAX_RESPONSE_BYTES = 1024 * 1024;
// Asymmetric only: with HS* the key is the client secret, which the site and every other holder share.
const ID_TOKEN_ALGORITHMS = [
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519',
];

interface Discovery {
  issuer: string;
  introspectionEndpoint: string | undefined;
  userinfoEndpoint: string | undefined;
  jwksUri: string | undefined;
}

interface CacheEntry {
  expiresAtMs: number;
  result: ProviderUser;
}

const invalid = (description: string): Unauthenticated => new Unauthenticated('INVALID_TOKEN', 'provider', description);

/**
 * Builds the verifier for the site's provider settings.
 *
 * @throws Error when the settings give no way to check a token (no issuer, introspection URL or user-info
 *   URL), or an introspection URL is set without client credentials.
 */
export function createProviderVerifier(opts: ProviderVerifierOptions): ProviderVerifier {
  const { clock, userClaim, timeoutMs, cacheSeconds } = opts;
  const fetchImpl = opts.fetch ?? fetch;
  const issuer = opts.issuer?.replace(/\/+$/, '');
  const hasClientCredentials = Boolean(opts.clientId && opts.clientSecret);
  if (!issuer && !opts.introspectionUrl && !opts.userinfoUrl) {
    throw new Error('provider tokens need an issuer, an introspection URL or a user-info URL');
  }
  if (opts.introspectionUrl && !hasClientCredentials) {
    throw new Error('provider introspection needs a client id and client secret');
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error('provider timeoutMs must be a positive integer');

  const cache = new Map<string, CacheEntry>();
  let discovery: Promise<Discovery> | undefined;
  let jwks: { uri: string; keys: ReturnType<typeof createRemoteJWKSet> } | undefined;

  /** One JSON object from the provider, or INVALID_TOKEN; the whole exchange is bounded by timeoutMs. */
  async function fetchJson(url: string, init: RequestInit, what: string): Promise<Record<string, unknown>> {
    const signal = AbortSignal.timeout(timeoutMs);
    // No redirects: the request carries the token (and for introspection the client secret).
    let text: string;
    let response: Response;
    try {
      response = await fetchImpl(url, { ...init, signal, redirect: 'error' });
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw invalid(`${what} answered HTTP ${response.status}`);
      }
      text = await readBoundedText(response);
    } catch (error) {
      if (error instanceof Unauthenticated) throw error;
      throw invalid(signal.aborted ? `${what} did not answer in time` : `${what} could not be reached`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw invalid(`${what} did not answer with JSON`);
    }
    if (!isRecord(body)) throw invalid(`${what} did not answer with a JSON object`);
    return body;
  }

  // Lazy and shared by concurrent callers; a failure is forgotten so the next call fetches again.
  function discover(issuerUrl: string): Promise<Discovery> {
    discovery ??= fetchDiscovery(issuerUrl).catch((error: unknown) => {
      discovery = undefined;
      throw error;
    });
    return discovery;
  }

  async function fetchDiscovery(issuerUrl: string): Promise<Discovery> {
    const doc = await fetchJson(`${issuerUrl}/.well-known/openid-configuration`, {
      headers: { accept: 'application/json' },
    }, 'provider discovery');
    // OIDC Discovery §4.3: the document must name the issuer it was fetched for.
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== issuerUrl) {
      throw invalid('provider discovery names another issuer');
    }
    return {
      issuer: doc.issuer,
      introspectionEndpoint: endpointField(doc, 'introspection_endpoint'),
      userinfoEndpoint: endpointField(doc, 'userinfo_endpoint'),
      jwksUri: endpointField(doc, 'jwks_uri'),
    };
  }

  async function introspectionEndpoint(): Promise<string | undefined> {
    if (!hasClientCredentials) return undefined;
    return opts.introspectionUrl ?? (issuer ? (await discover(issuer)).introspectionEndpoint : undefined);
  }

  async function userinfoEndpoint(): Promise<string | undefined> {
    return opts.userinfoUrl ?? (issuer ? (await discover(issuer)).userinfoEndpoint : undefined);
  }

  // RFC 7662 §2.1, with client_secret_basic (RFC 6749 §2.3.1: form-encode before base64).
  async function introspect(url: string, kind: ProviderTokenKind, token: string): Promise<Record<string, unknown>> {
    const form = new URLSearchParams({ token });
    // RFC 7662 registers hints for access and refresh tokens only.
    if (kind === 'access_token') form.set('token_type_hint', 'access_token');
    const credentials = `${formEncode(opts.clientId ?? '')}:${formEncode(opts.clientSecret ?? '')}`;
    const body = await fetchJson(url, {
      method: 'POST',
      headers: {
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
      },
      body: form.toString(),
    }, 'provider introspection');
    if (typeof body.active !== 'boolean') throw invalid('provider introspection answer is malformed');
    if (!body.active) throw invalid('token is not active');
    checkTimes(body);
    // RFC 8705 / RFC 9449: a bound token needs a proof of possession these headers cannot carry.
    if (body.cnf !== undefined) throw invalid('token is bound to a key and cannot be used as a bearer token');
    return body;
  }

  function checkTimes(claims: Record<string, unknown>): void {
    const nowSeconds = clock.now() / 1000;
    if (claims.exp !== undefined) {
      if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp)) throw invalid('token expiry is malformed');
      if (claims.exp <= nowSeconds) throw invalid('token has expired');
    }
    if (claims.nbf !== undefined) {
      if (typeof claims.nbf !== 'number' || !Number.isFinite(claims.nbf)) throw invalid('token start time is malformed');
      if (claims.nbf > nowSeconds) throw invalid('token is not valid yet');
    }
  }

  // OIDC Core §5.3.1: user-info with the access token as a bearer token.
  function fetchUserinfo(url: string, token: string): Promise<Record<string, unknown>> {
    return fetchJson(url, {
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
    }, 'provider user-info');
  }

  async function verifyAccessToken(token: string): Promise<Record<string, unknown>> {
    const introspectionUrl = await introspectionEndpoint();
    if (introspectionUrl) {
      const claims = await introspect(introspectionUrl, 'access_token', token);
      if (claims[userClaim] !== undefined && claims[userClaim] !== null) return claims;
      const userinfoUrl = await userinfoEndpoint();
      if (!userinfoUrl) return claims;
      const info = await fetchUserinfo(userinfoUrl, token);
      // OIDC Core §5.3.2: user-info must be about the same subject.
      if (typeof claims.sub === 'string' && info.sub !== claims.sub) throw invalid('provider user-info is about another subject');
      return { ...info, ...claims, [userClaim]: info[userClaim] };
    }
    const userinfoUrl = await userinfoEndpoint();
    if (!userinfoUrl) throw invalid('provider offers no way to check access tokens');
    return fetchUserinfo(userinfoUrl, token);
  }

  async function verifyIdToken(token: string): Promise<Record<string, unknown>> {
    const found = issuer ? await discover(issuer) : undefined;
    if (found?.jwksUri) return verifyJwt(token, found.issuer, found.jwksUri);
    const introspectionUrl = await introspectionEndpoint();
    if (!introspectionUrl) throw invalid('provider offers no way to check ID tokens');
    return introspect(introspectionUrl, 'id_token', token);
  }

  async function verifyJwt(token: string, expectedIssuer: string, jwksUri: string): Promise<Record<string, unknown>> {
    if (jwks?.uri !== jwksUri) {
      jwks = {
        uri: jwksUri,
        keys: createRemoteJWKSet(new URL(jwksUri), {
          timeoutDuration: timeoutMs,
          [customFetch]: (url, init) => fetchImpl(url, init),
        }),
      };
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks.keys, {
        issuer: expectedIssuer,
        audience: opts.clientId,
        algorithms: ID_TOKEN_ALGORITHMS,
        requiredClaims: ['exp'],
        currentDate: new Date(clock.now()),
      }));
    } catch (error) {
      throw invalid(describeJoseError(error));
    }
    // OIDC Core §3.1.3.7 (6): when present, azp must be this client.
    if (opts.clientId && payload.azp !== undefined && payload.azp !== opts.clientId) {
      throw invalid('token was issued to another client');
    }
    return payload as Record<string, unknown>;
  }

  function userOf(claims: Record<string, unknown>): string {
    const value = claims[userClaim];
    if (value === undefined || value === null) throw invalid(`token has no "${userClaim}" claim`);
    if (typeof value !== 'string' || value === '') throw invalid(`token "${userClaim}" claim is not a string`);
    // An address the provider has not verified would let anyone claim a site user's e-mail.
    if (userClaim === 'email' && (claims.email_verified === false || claims.email_verified === 'false')) {
      throw invalid('token e-mail address is not verified');
    }
    return value;
  }

  function remember(key: string, result: ProviderUser): void {
    const now = clock.now();
    const exp = result.claims.exp;
    const untilExpMs = typeof exp === 'number' ? exp * 1000 - now : Infinity;
    const ttlMs = Math.min(cacheSeconds * 1000, untilExpMs);
    if (!(ttlMs > 0)) return;
    cache.delete(key);
    if (cache.size >= MAX_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(key, { expiresAtMs: now + ttlMs, result });
  }

  function recall(key: string): ProviderUser | undefined {
    const entry = cache.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs > clock.now()) return entry.result;
    cache.delete(key);
    return undefined;
  }

  return {
    async verify(kind, token) {
      if (kind !== 'access_token' && kind !== 'id_token') throw invalid('unknown token kind');
      if (typeof token !== 'string' || token.length === 0) throw invalid('token is empty');
      if (token.length > MAX_PROVIDER_TOKEN_LENGTH) throw invalid('token is too long');
      // Visible ASCII only (RFC 6750 §2.1 b64token is narrower still); anything else cannot be a token.
      if (!/^[\x21-\x7e]+$/.test(token)) throw invalid('token has characters no token has');

      // The cache key is a digest so the raw token is never kept in memory longer than the request.
      const key = createHash('sha256').update(kind).update('\0').update(token).digest('hex');
      const cached = recall(key);
      if (cached) return cached;

      let claims: Record<string, unknown>;
      try {
        claims = kind === 'access_token' ? await verifyAccessToken(token) : await verifyIdToken(token);
      } catch (error) {
        if (error instanceof Unauthenticated) throw error;
        throw invalid('token could not be checked');
      }
      const result: ProviderUser = Object.freeze({ user: userOf(claims), claims: Object.freeze(claims) });
      remember(key, result);
      return result;
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function endpointField(doc: Record<string, unknown>, name: string): string | undefined {
  const value = doc[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !/^https?:\/\/\S+$/.test(value)) throw invalid(`provider discovery ${name} is malformed`);
  return value;
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}

/** The body as text, refusing more than MAX_RESPONSE_BYTES so a hostile provider cannot fill memory. */
async function readBoundedText(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw invalid('provider answer is too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeJoseError(error: unknown): string {
  const code = isRecord(error) || error instanceof Error ? (error as { code?: unknown }).code : undefined;
  switch (code) {
    case 'ERR_JWT_EXPIRED': return 'token has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = (error as { claim?: unknown }).claim;
      return typeof claim === 'string' ? `token "${claim}" claim is not acceptable` : 'token claims are not acceptable';
    }
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED': return 'token signing algorithm is not allowed';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS': return 'token signature is not valid';
    case 'ERR_JWKS_TIMEOUT': return 'provider keys did not load in time';
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID': return 'token is not a valid JWT';
    case 'ERR_JWK_INVALID':
    case 'ERR_JWKS_INVALID': return 'provider keys are malformed';
    // jose's generic error (non-200, non-JSON JWKS) or the fetch's own network error.
    default: return 'provider keys could not be loaded';
  }
}
