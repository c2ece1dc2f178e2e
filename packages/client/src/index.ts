/**
 * @latchkey/client: a typed client for Latchkey's admin API. The types (schema.ts) and the list of
 * bearer routes (bearer-paths.ts) are generated from the service's OpenAPI document; openapi-fetch
 * makes the calls. Written by hand is only what the document cannot express: the request signature,
 * the /moas/api path, and where an OAuth access token goes.
 */
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import { BEARER_PATHS } from './bearer-paths.ts';
import type { paths } from './schema.ts';

export type { components, operations, paths } from './schema.ts';
export { BEARER_PATHS };

export type LatchkeyClient = Client<paths>;

/** An access token, or a function returning the current one (called before each bearer request). */
export type BearerToken = string | (() => string | Promise<string>);

export interface LatchkeyClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The service's public URL (LATCHKEY_PUBLIC_URL), path prefix included: `https://id.example.com`. */
  baseUrl: string;
  /**
   * With `apiKey` (both from the console's account details): signs every admin request with
   * Customer-Key, Timestamp and the SHA-512 digest in Authorization.
   */
  customerKey?: string;
  apiKey?: string;
  /**
   * Sent as `Authorization: Bearer …` on the routes that accept it (magic links) instead of the
   * signature; with no keys, on every admin route. See {@link clientCredentialsToken}.
   */
  bearer?: BearerToken;
  /** `/moas/api`: call the admin routes under the hosted service's path (same routes, same bodies). */
  basePath?: '/api' | '/moas/api';
  /** The Timestamp's clock, in epoch milliseconds (default Date.now). */
  now?: () => number;
}

const ADMIN_PREFIX = '/api/';

/** Lowercase hex SHA-512 of customerKey + timestamp + apiKey (Web Crypto: Node 20 and browsers). */
export async function signature(customerKey: string, timestamp: string, apiKey: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-512', new TextEncoder().encode(customerKey + timestamp + apiKey));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The signing, bearer and base-path hook; createLatchkeyClient installs it. */
export function latchkeyAuth(opts: Pick<LatchkeyClientOptions, 'customerKey' | 'apiKey' | 'bearer' | 'basePath' | 'now'>): Middleware {
  if ((opts.customerKey === undefined) !== (opts.apiKey === undefined)) throw new TypeError('customerKey and apiKey go together');
  const now = opts.now ?? Date.now;
  const { customerKey, apiKey, bearer } = opts;
  const signs = customerKey !== undefined && apiKey !== undefined;
  return {
    async onRequest({ request, schemaPath, options }) {
      // /oauth/token and anything else outside the admin API carries its own authentication.
      if (!schemaPath.startsWith(ADMIN_PREFIX)) return undefined;
      if (bearer !== undefined && (BEARER_PATHS.has(schemaPath) || !signs)) {
        const token = typeof bearer === 'function' ? await bearer() : bearer;
        request.headers.set('Authorization', `Bearer ${token}`);
      } else if (signs) {
        const timestamp = String(now());
        request.headers.set('Customer-Key', customerKey);
        request.headers.set('Timestamp', timestamp);
        request.headers.set('Authorization', await signature(customerKey, timestamp, apiKey));
      }
      if (opts.basePath !== '/moas/api') return request;
      const from = `${options.baseUrl}${ADMIN_PREFIX}`;
      if (!request.url.startsWith(from)) return request;
      // A Request's URL is read-only: rebuild it (admin bodies are small JSON, read whole).
      return new Request(`${options.baseUrl}/moas${request.url.slice(options.baseUrl.length)}`, {
        method: request.method,
        headers: request.headers,
        body: request.body === null ? undefined : await request.arrayBuffer(),
        signal: request.signal,
        redirect: request.redirect,
      });
    },
  };
}

/**
 * A typed client: `client.POST('/api/admin/users/get', { body })` resolves to `{ data }` on a 2xx
 * or `{ error }` (the documented error body: JSON, or the plain text some routes answer), with
 * `response` for the status. Paths are written as documented (`/api/...`) whatever `basePath` is.
 */
export function createLatchkeyClient(options: LatchkeyClientOptions): LatchkeyClient {
  const { customerKey, apiKey, bearer, basePath, now, ...rest } = options;
  const auth = latchkeyAuth({ customerKey, apiKey, bearer, basePath, now });
  const client = createClient<paths>(rest);
  client.use(auth);
  return client;
}

/**
 * A `bearer` that asks POST /oauth/token for a client-credentials access token (an OAuth client
 * from /api/admin/oauth-clients/create) and reuses it until a minute before it expires.
 */
export function clientCredentialsToken(opts: {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  fetch?: ClientOptions['fetch'];
  now?: () => number;
}): () => Promise<string> {
  const now = opts.now ?? Date.now;
  const client = createClient<paths>({ baseUrl: opts.baseUrl, fetch: opts.fetch });
  let cached: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchToken = async (): Promise<string> => {
    const { data, error, response } = await client.POST('/oauth/token', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: { grant_type: 'client_credentials', client_id: opts.clientId, client_secret: opts.clientSecret, ...(opts.scope ? { scope: opts.scope } : {}) },
    });
    if (!data) throw new LatchkeyTokenError(response.status, error);
    cached = { token: data.access_token, renewAt: now() + Math.max(0, data.expires_in - 60) * 1000 };
    return data.access_token;
  };
  return async () => {
    if (cached && now() < cached.renewAt) return cached.token;
    // Concurrent callers share one token request.
    pending ??= fetchToken().finally(() => { pending = undefined; });
    return pending;
  };
}

/** POST /oauth/token refused the client (its RFC 6749 error body is in `body`). */
export class LatchkeyTokenError extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    const detail = body && typeof body === 'object' && 'error' in body ? `: ${String((body as { error: unknown }).error)}` : '';
    super(`the token endpoint answered ${status}${detail}`);
    this.name = 'LatchkeyTokenError';
  }
}
