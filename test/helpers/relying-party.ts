/**
 * A browser for OpenID flows in tests: fetch with manual redirects and a cookie jar that honours
 * Path (so a cookie scoped to one customer's issuer never reaches another's), plus the pieces of a
 * relying party built on openid-client.
 */
import * as client from 'openid-client';

interface StoredCookie { name: string; value: string; path: string }

export class Browser {
  private jar: StoredCookie[] = [];
  /** Where requests really go (a load balancer in front of several nodes); default: the URL's origin. */
  route: (url: URL) => URL = (url) => url;

  cookiesFor(url: URL): StoredCookie[] {
    return this.jar.filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`));
  }

  /** Adds a Set-Cookie line as a browser would for a response from `url`. */
  store(url: URL, setCookie: string): void {
    const [pair = '', ...attributes] = setCookie.split(';');
    const at = pair.indexOf('=');
    const name = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    const attribute = (key: string) => attributes.map((a) => a.trim()).find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
    const path = attribute('path') ?? url.pathname.replace(/\/[^/]*$/, '') ?? '/';
    this.jar = this.jar.filter((c) => !(c.name === name && c.path === path));
    const maxAge = attribute('max-age');
    const expires = attribute('expires');
    const expired = (maxAge !== undefined && Number(maxAge) <= 0) || (expires !== undefined && Date.parse(expires) <= Date.now());
    if (!expired) this.jar.push({ name, value, path });
  }

  async fetch(input: string | URL, init: RequestInit = {}, extraCookies: string[] = []): Promise<Response> {
    const url = new URL(input);
    const headers = new Headers(init.headers);
    const cookies = [...this.cookiesFor(url).map((c) => `${c.name}=${c.value}`), ...extraCookies];
    if (cookies.length > 0) headers.set('cookie', cookies.join('; '));
    const response = await fetch(this.route(url), { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) this.store(url, line);
    return response;
  }

  /**
   * Follows redirects from `start` until one leads to a URL starting with `stopAt` (returned
   * without being fetched), or a non-redirect response (returned with its URL).
   */
  async follow(start: string | URL, stopAt: string): Promise<{ url: URL; response?: Response }> {
    let url = new URL(start);
    for (let hop = 0; hop < 10; hop++) {
      if (url.href.startsWith(stopAt)) return { url };
      const response = await this.fetch(url);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { url, response };
      url = new URL(location, url);
    }
    throw new Error(`too many redirects from ${start}`);
  }
}

/** openid-client's discovery for a confidential client (client_secret_basic) over plain http. */
export function discover(issuer: string, clientId: string, clientSecret: string): Promise<client.Configuration> {
  return client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretBasic(clientSecret), { execute: [client.allowInsecureRequests] });
}

export interface AuthorizationRequest {
  url: URL;
  codeVerifier: string;
  state: string;
  nonce: string;
}

export async function authorizationRequest(config: client.Configuration, redirectUri: string, scope = 'openid email profile'): Promise<AuthorizationRequest> {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url, codeVerifier, state, nonce };
}
