/**
 * A real OpenID provider (oidc-provider) in the test process, and the authorization-code flow driven
 * over HTTP as a browser would, to obtain real access and ID tokens. Shared by the provider verifier's
 * unit suite and the site's end-to-end provider suite.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import type { JWK } from 'jose';
// @ts-expect-error TS7016: oidc-provider@8 ships no type declarations; ProviderClass types the part used here.
import UntypedProvider from 'oidc-provider';

type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
};
const Provider = UntypedProvider as ProviderClass;

export interface TestAccount {
  email: string;
  emailVerified: boolean;
  /** Whether the provider copies the e-mail into the access token (and so into introspection answers). */
  emailInAccessToken: boolean;
}

export const ACCOUNTS: Record<string, TestAccount> = {
  alice: { email: 'alice@example.test', emailVerified: true, emailInAccessToken: true },
  bob: { email: 'Bob@Example.test', emailVerified: true, emailInAccessToken: false },
  mallory: { email: 'mallory@example.test', emailVerified: false, emailInAccessToken: false },
};

export interface TestClient { id: string; secret: string }
export const SITE_CLIENT: TestClient = { id: 'latchkey-site', secret: randomBytes(32).toString('base64url') };
export const OTHER_CLIENT: TestClient = { id: 'other-app', secret: randomBytes(32).toString('base64url') };
// Never contacted: the flow stops at the redirect and reads the code from its Location.
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const TOKEN_TTL_SECONDS = 300;

export interface TokenResponse { access_token: string; id_token: string; expires_in: number }

export interface TestProvider {
  issuer: string;
  signingKey: JWK;
  /** Runs the authorization-code flow (login + consent through devInteractions) for `accountId`. */
  signIn(accountId: string, client?: TestClient): Promise<TokenResponse>;
  revoke(token: string): Promise<void>;
}

function basic(client: TestClient): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`;
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function startProvider(): Promise<TestProvider & { close(): Promise<void> }> {
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => handle(req, res));
  const issuer = await listen(server);

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const signingKey: JWK = { ...privateJwk, kid: await calculateJwkThumbprint(privateJwk), alg: 'RS256', use: 'sig' };

  const provider = new Provider(issuer, {
    clients: [SITE_CLIENT, OTHER_CLIENT].map((client) => ({
      client_id: client.id,
      client_secret: client.secret,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // Put scope claims into the ID token too, so the id_token carries the e-mail.
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: true },
      introspection: {
        enabled: true,
        allowedPolicy: async (ctx: { oidc: { client: { clientId: string } } }) => ctx.oidc.client.clientId === SITE_CLIENT.id,
      },
      revocation: { enabled: true },
      userinfo: { enabled: true },
    },
    ttl: {
      AccessToken: TOKEN_TTL_SECONDS,
      IdToken: TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      Grant: 600,
      Interaction: 600,
      Session: 600,
    },
    findAccount: async (_ctx: unknown, sub: string) => {
      const account = ACCOUNTS[sub];
      if (!account) return undefined;
      return {
        accountId: sub,
        claims: async () => ({ sub, email: account.email, email_verified: account.emailVerified }),
      };
    },
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => {
      const account = token.accountId ? ACCOUNTS[token.accountId] : undefined;
      return account?.emailInAccessToken ? { email: account.email } : undefined;
    },
  });
  handle = provider.callback();

  async function signIn(accountId: string, client = SITE_CLIENT): Promise<TokenResponse> {
    // A fresh browser per sign-in: one cookie jar, paths ignored (the provider scopes them itself).
    const jar = new Map<string, string>();
    const browse = async (url: string, init: RequestInit = {}): Promise<Response> => {
      const headers = new Headers(init.headers);
      if (jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
      const response = await fetch(url, { ...init, headers, redirect: 'manual' });
      for (const cookie of response.headers.getSetCookie()) {
        const [pair = '', ...attributes] = cookie.split(';');
        const name = pair.slice(0, pair.indexOf('=')).trim();
        const value = pair.slice(pair.indexOf('=') + 1).trim();
        const expired = attributes.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split('=')[1] ?? '') <= Date.now());
        if (expired || value === '') jar.delete(name);
        else jar.set(name, value);
      }
      return response;
    };

    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL('/auth', issuer);
    authorize.search = new URLSearchParams({
      client_id: client.id,
      response_type: 'code',
      scope: 'openid email',
      redirect_uri: REDIRECT_URI,
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();

    let url = authorize.href;
    let init: RequestInit = {};
    for (let step = 0; step < 12; step += 1) {
      const response = await browse(url, init);
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        url = new URL(location, url).href;
        init = {};
        if (url.startsWith(REDIRECT_URI)) break;
        continue;
      }
      assert.equal(response.status, 200, `unexpected ${response.status} at ${url}`);
      // devInteractions renders one form per prompt: login (login + password), then consent.
      const html = await response.text();
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/.exec(html);
      assert.ok(form?.[1] && form[2] !== undefined, `no form at ${url}`);
      const fields = new URLSearchParams();
      for (const input of form[2].matchAll(/<input\b[^>]*\bname="([^"]+)"[^>]*>/g)) {
        const name = input[1] ?? '';
        const value = /\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? '';
        fields.set(name, name === 'login' ? accountId : name === 'password' ? 'any password' : value);
      }
      url = new URL(form[1].replaceAll('&amp;', '&'), url).href;
      init = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() };
    }
    const code = new URL(url).searchParams.get('code');
    assert.ok(url.startsWith(REDIRECT_URI) && code, `flow did not reach the redirect URI: ${url}`);

    const response = await fetch(new URL('/token', issuer), {
      method: 'POST',
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }),
    });
    const tokens = await response.json() as TokenResponse;
    assert.equal(response.status, 200, JSON.stringify(tokens));
    return tokens;
  }

  async function revoke(token: string): Promise<void> {
    const response = await fetch(new URL('/token/revocation', issuer), {
      method: 'POST',
      headers: { authorization: basic(SITE_CLIENT), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
    });
    assert.equal(response.status, 200);
  }

  return { issuer, signingKey, signIn, revoke, close: () => closeServer(server) };
}

