/**
 * Provider tokens against a real OpenID provider (oidc-provider, in this process). Tokens come from the
 * authorization-code flow driven over HTTP as a browser would; small stub servers play broken providers.
 */
import { after, before, describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT, UnsecuredJWT, decodeJwt, generateKeyPair, importJWK } from 'jose';
import { createProviderVerifier, MAX_PROVIDER_TOKEN_LENGTH } from '../../../src/site/protect/provider-token.ts';
import type { ProviderVerifierOptions } from '../../../src/site/protect/provider-token.ts';
import { Unauthenticated } from '../../../src/lib/errors.ts';
import { createTestClock } from '../../../src/lib/clock.ts';
import {
  closeServer, listen, OTHER_CLIENT, SITE_CLIENT, startProvider, TOKEN_TTL_SECONDS, type TestProvider,
} from '../../helpers/oidc-provider.ts';

/** A local HTTP server answering every request with `respond`; records what it received. */
async function startStub(
  t: TestContext,
  respond: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ url: string; requests: Array<{ method: string; path: string; headers: IncomingMessage['headers']; body: string }> }> {
  const requests: Array<{ method: string; path: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      respond(req, res, body);
    });
  });
  const url = await listen(server);
  t.after(() => closeServer(server));
  return { url, requests };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A fetch that records the path of every request it passes on. */
function countingFetch(): { fetch: typeof fetch; paths: string[] } {
  const paths: string[] = [];
  const counted: typeof fetch = (input, init) => {
    paths.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
    return fetch(input, init);
  };
  return { fetch: counted, paths };
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  await closeServer(server);
  return url;
}

async function assertInvalidToken(promise: Promise<unknown>, token: string, description: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof Unauthenticated, `expected Unauthenticated, got ${String(error)}`);
    assert.equal(error.reason, 'INVALID_TOKEN');
    assert.equal(error.method, 'provider');
    assert.equal(error.message, description);
    if (token !== '') assert.ok(!error.message.includes(token), 'the token is not in the message');
    return true;
  });
}

let op: TestProvider & { close(): Promise<void> };
before(async () => { op = await startProvider(); });
after(() => op.close());

function options(overrides: Partial<ProviderVerifierOptions> = {}): ProviderVerifierOptions {
  return {
    issuer: op.issuer,
    introspectionUrl: undefined,
    userinfoUrl: undefined,
    clientId: SITE_CLIENT.id,
    clientSecret: SITE_CLIENT.secret,
    userClaim: 'email',
    timeoutMs: 3000,
    cacheSeconds: 60,
    // Near real time: the provider stamps exp with its own clock.
    clock: createTestClock(Date.now()),
    ...overrides,
  };
}

describe('access_token', () => {
  test('introspection (found by discovery) gives the user e-mail', async () => {
    const { access_token } = await op.signIn('alice');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ fetch: counter.fetch }));

    const { user, claims } = await verifier.verify('access_token', access_token);

    assert.equal(user, 'alice@example.test');
    assert.equal(claims.active, true);
    assert.equal(claims.sub, 'alice');
    assert.equal(claims.client_id, SITE_CLIENT.id);
    assert.deepEqual(counter.paths, ['/.well-known/openid-configuration', '/token/introspection']);
  });

  test('introspection without the claim falls back to user-info with the same token', async () => {
    const { access_token } = await op.signIn('bob');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ fetch: counter.fetch }));

    const { user, claims } = await verifier.verify('access_token', access_token);

    assert.equal(user, 'Bob@Example.test', 'the value is returned as the provider spelled it');
    assert.equal(claims.sub, 'bob');
    assert.equal(claims.active, true);
    assert.deepEqual(counter.paths, ['/.well-known/openid-configuration', '/token/introspection', '/me']);
  });

  test('user-info-only configuration (no issuer, no client credentials)', async () => {
    const { access_token } = await op.signIn('alice');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({
      issuer: undefined, userinfoUrl: `${op.issuer}/me`, clientId: undefined, clientSecret: undefined, fetch: counter.fetch,
    }));

    const { user, claims } = await verifier.verify('access_token', access_token);

    assert.equal(user, 'alice@example.test');
    assert.deepEqual(claims, { sub: 'alice', email: 'alice@example.test', email_verified: true });
    assert.deepEqual(counter.paths, ['/me']);
  });

  test('an issuer without client credentials uses the discovered user-info endpoint', async () => {
    const { access_token } = await op.signIn('alice');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ clientId: undefined, clientSecret: undefined, fetch: counter.fetch }));

    assert.equal((await verifier.verify('access_token', access_token)).user, 'alice@example.test');
    assert.deepEqual(counter.paths, ['/.well-known/openid-configuration', '/me']);
  });

  test('explicit endpoints override discovery', async () => {
    const { access_token } = await op.signIn('bob');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({
      issuer: await closedPortUrl(),
      introspectionUrl: `${op.issuer}/token/introspection`,
      userinfoUrl: `${op.issuer}/me`,
      fetch: counter.fetch,
    }));

    assert.equal((await verifier.verify('access_token', access_token)).user, 'Bob@Example.test');
    assert.deepEqual(counter.paths, ['/token/introspection', '/me']);
  });

  test('revoked and unknown tokens are inactive', async () => {
    const { access_token } = await op.signIn('alice');
    const verifier = createProviderVerifier(options({ cacheSeconds: 0 }));
    assert.equal((await verifier.verify('access_token', access_token)).user, 'alice@example.test');

    await op.revoke(access_token);
    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'token is not active');

    const unknown = randomBytes(32).toString('base64url');
    await assertInvalidToken(verifier.verify('access_token', unknown), unknown, 'token is not active');
  });

  test('an expired token is refused once the clock passes its exp', async () => {
    const { access_token } = await op.signIn('alice');
    const clock = createTestClock(Date.now());
    const verifier = createProviderVerifier(options({ clock, cacheSeconds: 0 }));

    clock.advance((TOKEN_TTL_SECONDS + 1) * 1000);

    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'token has expired');
  });

  test('an e-mail address the provider marks unverified is not accepted as the user', async () => {
    const { access_token, id_token } = await op.signIn('mallory');
    const verifier = createProviderVerifier(options());

    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'token e-mail address is not verified');
    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'token e-mail address is not verified');
  });

  test('another user claim can be configured', async () => {
    const { access_token } = await op.signIn('bob');
    const verifier = createProviderVerifier(options({ userClaim: 'sub' }));

    assert.equal((await verifier.verify('access_token', access_token)).user, 'bob');
  });

  test('a claim the provider does not give is refused', async () => {
    const { access_token } = await op.signIn('bob');
    const verifier = createProviderVerifier(options({ userClaim: 'preferred_username' }));

    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'token has no "preferred_username" claim');
  });
});

describe('id_token', () => {
  test('a valid ID token is verified against the provider JWKS', async () => {
    const { id_token } = await op.signIn('alice');
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ fetch: counter.fetch }));

    const { user, claims } = await verifier.verify('id_token', id_token);

    assert.equal(user, 'alice@example.test');
    assert.equal(claims.iss, op.issuer);
    assert.equal(claims.aud, SITE_CLIENT.id);
    assert.equal(claims.sub, 'alice');
    assert.deepEqual(counter.paths, ['/.well-known/openid-configuration', '/jwks']);
  });

  test('an ID token from another issuer is refused', async (t) => {
    const elsewhere = await startProvider();
    t.after(() => elsewhere.close());
    const { id_token } = await elsewhere.signIn('alice');
    const verifier = createProviderVerifier(options());

    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'token signature is not valid');
  });

  test('an ID token with the right kid but another signer, or another issuer claim, is refused', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const claims = { sub: 'alice', email: 'alice@example.test', email_verified: true };
    const verifier = createProviderVerifier(options());

    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: op.signingKey.kid })
      .setIssuer(op.issuer).setAudience(SITE_CLIENT.id).setIssuedAt().setExpirationTime('5m')
      .sign(privateKey);
    await assertInvalidToken(verifier.verify('id_token', forged), forged, 'token signature is not valid');

    // Signed with the provider's own key, so only the iss check can catch it.
    const providerKey = await importJWK(op.signingKey, 'RS256');
    const wrongIssuer = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: op.signingKey.kid })
      .setIssuer('https://elsewhere.example').setAudience(SITE_CLIENT.id).setIssuedAt().setExpirationTime('5m')
      .sign(providerKey);
    await assertInvalidToken(verifier.verify('id_token', wrongIssuer), wrongIssuer, 'token "iss" claim is not acceptable');
  });

  test('a real ID token with an altered payload is refused', async () => {
    const { id_token } = await op.signIn('bob');
    const [header, , signature] = id_token.split('.');
    const payload = { ...decodeJwt(id_token), email: 'alice@example.test' };
    const tampered = `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${signature}`;
    const verifier = createProviderVerifier(options());

    await assertInvalidToken(verifier.verify('id_token', tampered), tampered, 'token signature is not valid');
  });

  test('symmetric and unsigned ID tokens are refused', async () => {
    const claims = { sub: 'alice', email: 'alice@example.test', email_verified: true };
    const verifier = createProviderVerifier(options());

    // HS256 keyed with the client secret: anyone holding the secret could mint it.
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(op.issuer).setAudience(SITE_CLIENT.id).setIssuedAt().setExpirationTime('5m')
      .sign(new TextEncoder().encode(SITE_CLIENT.secret));
    await assertInvalidToken(verifier.verify('id_token', hmac), hmac, 'token signing algorithm is not allowed');

    const unsigned = new UnsecuredJWT(claims)
      .setIssuer(op.issuer).setAudience(SITE_CLIENT.id).setIssuedAt().setExpirationTime('5m')
      .encode();
    await assertInvalidToken(verifier.verify('id_token', unsigned), unsigned, 'token signing algorithm is not allowed');

    await assertInvalidToken(verifier.verify('id_token', 'not-a-jwt'), 'not-a-jwt', 'token is not a valid JWT');
  });

  test('an ID token issued to another client is refused', async () => {
    const { id_token } = await op.signIn('alice', OTHER_CLIENT);
    const verifier = createProviderVerifier(options());

    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'token "aud" claim is not acceptable');
  });

  test('an expired ID token is refused once the clock passes its exp', async () => {
    const { id_token } = await op.signIn('alice');
    const clock = createTestClock(Date.now());
    const verifier = createProviderVerifier(options({ clock }));

    clock.advance((TOKEN_TTL_SECONDS + 1) * 1000);

    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'token has expired');
  });

  test('without an issuer, ID tokens are introspected (no access-token hint)', async (t) => {
    const stub = await startStub(t, (_req, res) => json(res, 200, { active: true, email: 'alice@example.test' }));
    const verifier = createProviderVerifier(options({ issuer: undefined, introspectionUrl: `${stub.url}/introspect` }));

    assert.equal((await verifier.verify('id_token', 'opaque.id.token')).user, 'alice@example.test');
    assert.equal(stub.requests[0]?.body, 'token=opaque.id.token');

    const userinfoOnly = createProviderVerifier(options({ issuer: undefined, userinfoUrl: `${stub.url}/me` }));
    await assertInvalidToken(userinfoOnly.verify('id_token', 'opaque.id.token'), 'opaque.id.token', 'provider offers no way to check ID tokens');
    assert.equal(stub.requests.length, 1);
  });
});

describe('requests sent to the provider', () => {
  test('introspection is a form POST with HTTP Basic client credentials; user-info a Bearer GET', async (t) => {
    const stub = await startStub(t, (req, res) => {
      if (req.url === '/introspect') json(res, 200, { active: true, sub: 'u1' });
      else json(res, 200, { sub: 'u1', email: 'u1@example.test' });
    });
    const verifier = createProviderVerifier(options({
      issuer: undefined,
      introspectionUrl: `${stub.url}/introspect`,
      userinfoUrl: `${stub.url}/me`,
      clientId: 'site client',
      clientSecret: 'p@ss:w/rd',
    }));

    assert.equal((await verifier.verify('access_token', 'tok-123')).user, 'u1@example.test');

    const [introspection, userinfo] = stub.requests;
    assert.equal(introspection?.method, 'POST');
    assert.equal(introspection?.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.equal(introspection?.body, 'token=tok-123&token_type_hint=access_token');
    // RFC 6749 §2.3.1: form-encoded, then base64.
    assert.equal(introspection?.headers.authorization, `Basic ${Buffer.from('site+client:p%40ss%3Aw%2Frd').toString('base64')}`);
    assert.equal(userinfo?.method, 'GET');
    assert.equal(userinfo?.path, '/me');
    assert.equal(userinfo?.headers.authorization, 'Bearer tok-123');
  });

  test('user-info about another subject than the introspected token is refused', async (t) => {
    const stub = await startStub(t, (req, res) => {
      if (req.url === '/introspect') json(res, 200, { active: true, sub: 'u1' });
      else json(res, 200, { sub: 'u2', email: 'u2@example.test' });
    });
    const verifier = createProviderVerifier(options({
      issuer: undefined, introspectionUrl: `${stub.url}/introspect`, userinfoUrl: `${stub.url}/me`,
    }));

    await assertInvalidToken(verifier.verify('access_token', 'tok-1'), 'tok-1', 'provider user-info is about another subject');
  });

  test('tokens over 8 KiB or with characters no token has are refused without a request', async () => {
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ fetch: counter.fetch }));
    const long = 'a'.repeat(MAX_PROVIDER_TOKEN_LENGTH + 1);

    assert.equal(MAX_PROVIDER_TOKEN_LENGTH, 8192);
    await assertInvalidToken(verifier.verify('access_token', long), long, 'token is too long');
    await assertInvalidToken(verifier.verify('id_token', long), long, 'token is too long');
    await assertInvalidToken(verifier.verify('access_token', 'a b'), 'a b', 'token has characters no token has');
    await assertInvalidToken(verifier.verify('access_token', 'ab\r\nX: y'), 'ab\r\nX: y', 'token has characters no token has');
    await assertInvalidToken(verifier.verify('access_token', ''), '', 'token is empty');
    assert.deepEqual(counter.paths, []);
  });
});

describe('failing providers', () => {
  test('provider down (closed port) fails closed', async () => {
    const down = await closedPortUrl();
    const viaDiscovery = createProviderVerifier(options({ issuer: down }));
    const viaIntrospection = createProviderVerifier(options({ issuer: undefined, introspectionUrl: `${down}/introspect` }));
    const viaUserinfo = createProviderVerifier(options({ issuer: undefined, userinfoUrl: `${down}/me` }));

    await assertInvalidToken(viaDiscovery.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider discovery could not be reached');
    await assertInvalidToken(viaDiscovery.verify('id_token', 'a.b.c'), 'a.b.c', 'provider discovery could not be reached');
    await assertInvalidToken(viaIntrospection.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider introspection could not be reached');
    await assertInvalidToken(viaUserinfo.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider user-info could not be reached');
  });

  test('a provider that never answers fails within timeoutMs', async (t) => {
    const stub = await startStub(t, () => { /* never answers */ });
    const viaIntrospection = createProviderVerifier(options({
      issuer: undefined, introspectionUrl: `${stub.url}/introspect`, timeoutMs: 200,
    }));
    const viaDiscovery = createProviderVerifier(options({ issuer: stub.url, timeoutMs: 200 }));

    await assertInvalidToken(viaIntrospection.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider introspection did not answer in time');
    await assertInvalidToken(viaDiscovery.verify('id_token', 'a.b.c'), 'a.b.c', 'provider discovery did not answer in time');
  });

  test('a JWKS endpoint that never answers fails within timeoutMs', async (t) => {
    const stub = await startStub(t, (req, res) => {
      if (req.url === '/.well-known/openid-configuration') json(res, 200, { issuer: stub.url, jwks_uri: `${stub.url}/jwks` });
    });
    const { id_token } = await op.signIn('alice');
    const verifier = createProviderVerifier(options({ issuer: stub.url, timeoutMs: 200 }));

    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'provider keys did not load in time');
  });

  const garbage: Array<{ name: string; status?: number; body: string; description: string }> = [
    { name: 'non-JSON', body: '<html>oops</html>', description: 'provider introspection did not answer with JSON' },
    { name: 'a JSON array', body: '[{"active":true}]', description: 'provider introspection did not answer with a JSON object' },
    { name: 'active as a string', body: '{"active":"yes","email":"a@example.test"}', description: 'provider introspection answer is malformed' },
    { name: 'no active field', body: '{"email":"a@example.test"}', description: 'provider introspection answer is malformed' },
    { name: 'exp as a string', body: '{"active":true,"exp":"tomorrow","email":"a@example.test"}', description: 'token expiry is malformed' },
    { name: 'a numeric user claim', body: '{"active":true,"email":42}', description: 'token "email" claim is not a string' },
    { name: 'an empty user claim', body: '{"active":true,"email":""}', description: 'token "email" claim is not a string' },
    { name: 'a key-bound token', body: '{"active":true,"email":"a@example.test","cnf":{"jkt":"x"}}', description: 'token is bound to a key and cannot be used as a bearer token' },
    { name: 'HTTP 500 with a valid-looking body', status: 500, body: '{"active":true,"email":"a@example.test"}', description: 'provider introspection answered HTTP 500' },
    { name: 'HTTP 401 (wrong client credentials)', status: 401, body: '{"error":"invalid_client"}', description: 'provider introspection answered HTTP 401' },
  ];
  for (const { name, status = 200, body, description } of garbage) {
    test(`introspection answering ${name} fails closed`, async (t) => {
      const stub = await startStub(t, (_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(body));
      const verifier = createProviderVerifier(options({ issuer: undefined, introspectionUrl: `${stub.url}/introspect` }));

      await assertInvalidToken(verifier.verify('access_token', 'opaque-xyz'), 'opaque-xyz', description);
    });
  }

  test('user-info and discovery answering garbage fail closed', async (t) => {
    const stub = await startStub(t, (req, res) => {
      if (req.url === '/me') res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hello</h1>');
      else if (req.url === '/me-array') json(res, 200, ['a@example.test']);
      else json(res, 200, { issuer: 'https://someone-else.example', jwks_uri: `${stub.url}/jwks` });
    });
    const html = createProviderVerifier(options({ issuer: undefined, userinfoUrl: `${stub.url}/me` }));
    const array = createProviderVerifier(options({ issuer: undefined, userinfoUrl: `${stub.url}/me-array` }));
    const otherIssuer = createProviderVerifier(options({ issuer: stub.url }));

    await assertInvalidToken(html.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider user-info did not answer with JSON');
    await assertInvalidToken(array.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider user-info did not answer with a JSON object');
    await assertInvalidToken(otherIssuer.verify('id_token', 'a.b.c'), 'a.b.c', 'provider discovery names another issuer');
  });

  test('discovery is fetched again after a failure', async () => {
    const { access_token } = await op.signIn('alice');
    const paths: string[] = [];
    let failNext = true;
    const flaky: typeof fetch = (input, init) => {
      paths.push(new URL(String(input)).pathname);
      if (failNext) {
        failNext = false;
        return Promise.reject(new TypeError('fetch failed'));
      }
      return fetch(input, init);
    };
    const verifier = createProviderVerifier(options({ fetch: flaky }));

    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'provider discovery could not be reached');
    assert.equal((await verifier.verify('access_token', access_token)).user, 'alice@example.test');
    assert.deepEqual(paths, ['/.well-known/openid-configuration', '/.well-known/openid-configuration', '/token/introspection']);

    await verifier.verify('id_token', (await op.signIn('alice')).id_token);
    assert.equal(paths.filter((p) => p === '/.well-known/openid-configuration').length, 2, 'a good discovery is kept');
  });
});

describe('cache', () => {
  test('a second verify within the cache time does not call the provider', async () => {
    const { access_token, id_token } = await op.signIn('bob');
    const clock = createTestClock(Date.now());
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ clock, cacheSeconds: 60, fetch: counter.fetch }));

    const first = await verifier.verify('access_token', access_token);
    const calls = counter.paths.length;
    clock.advance(59_000);
    assert.deepEqual(await verifier.verify('access_token', access_token), first);
    assert.equal(counter.paths.length, calls);

    clock.advance(1_000);
    assert.equal((await verifier.verify('access_token', access_token)).user, 'Bob@Example.test');
    assert.deepEqual(counter.paths.slice(calls), ['/token/introspection', '/me'], 'asked again after cacheSeconds');

    // Same token value under the other kind is a different cache key.
    await verifier.verify('id_token', id_token);
    const afterId = counter.paths.length;
    await verifier.verify('id_token', id_token);
    assert.equal(counter.paths.length, afterId);
  });

  test('a cached result is not used past the token exp', async () => {
    const { access_token, id_token } = await op.signIn('alice');
    const clock = createTestClock(Date.now());
    const counter = countingFetch();
    const verifier = createProviderVerifier(options({ clock, cacheSeconds: 3600, fetch: counter.fetch }));

    const { claims } = await verifier.verify('access_token', access_token);
    await verifier.verify('id_token', id_token);
    const calls = counter.paths.length;
    clock.set((claims.exp as number) * 1000 - 1000);
    await verifier.verify('access_token', access_token);
    await verifier.verify('id_token', id_token);
    assert.equal(counter.paths.length, calls, 'still cached one second before exp');

    clock.set((claims.exp as number) * 1000 + 1000);
    await assertInvalidToken(verifier.verify('access_token', access_token), access_token, 'token has expired');
    await assertInvalidToken(verifier.verify('id_token', id_token), id_token, 'token has expired');
    assert.deepEqual(counter.paths.slice(calls), ['/token/introspection'], 'the provider was asked again');
  });

  test('failures are not cached', async (t) => {
    let healthy = false;
    const stub = await startStub(t, (_req, res) => {
      if (healthy) json(res, 200, { active: true, email: 'a@example.test' });
      else json(res, 503, { error: 'temporarily_unavailable' });
    });
    const verifier = createProviderVerifier(options({ issuer: undefined, introspectionUrl: `${stub.url}/introspect` }));

    await assertInvalidToken(verifier.verify('access_token', 'opaque-xyz'), 'opaque-xyz', 'provider introspection answered HTTP 503');
    healthy = true;
    assert.equal((await verifier.verify('access_token', 'opaque-xyz')).user, 'a@example.test');
    assert.equal(stub.requests.length, 2);
  });

  test('the cache is bounded: the oldest entry is evicted first', async () => {
    let calls = 0;
    const fake: typeof fetch = async () => {
      calls += 1;
      return new Response(JSON.stringify({ active: true, email: 'a@example.test' }), { headers: { 'content-type': 'application/json' } });
    };
    const verifier = createProviderVerifier(options({
      issuer: undefined, introspectionUrl: 'http://introspection.invalid/', cacheSeconds: 3600, fetch: fake,
    }));

    for (let i = 0; i <= 10_000; i += 1) await verifier.verify('access_token', `tok-${i}`);
    assert.equal(calls, 10_001);
    await verifier.verify('access_token', 'tok-10000');
    assert.equal(calls, 10_001, 'the newest is still cached');
    await verifier.verify('access_token', 'tok-0');
    assert.equal(calls, 10_002, 'the oldest was evicted');
  });
});

describe('configuration', () => {
  test('settings that cannot check any token are refused when the verifier is built', () => {
    const clock = createTestClock();
    const base = { clientId: undefined, clientSecret: undefined, userClaim: 'email', timeoutMs: 3000, cacheSeconds: 60, clock };
    assert.throws(
      () => createProviderVerifier({ ...base, issuer: undefined, introspectionUrl: undefined, userinfoUrl: undefined }),
      /need an issuer, an introspection URL or a user-info URL/,
    );
    assert.throws(
      () => createProviderVerifier({ ...base, issuer: undefined, introspectionUrl: 'https://idp.example/introspect', userinfoUrl: undefined }),
      /needs a client id and client secret/,
    );
  });
});
