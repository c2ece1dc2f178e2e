/**
 * The protection plugin as another Fastify app would use it: options checked at registration, the
 * opt-out, request.principal, the per-request user check, lazy capabilities, the read-only default key.
 * Real JWTs (HS256); the other verifiers are in-memory stand-ins (the end-to-end suites use real ones).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { createTestClock } from '../../../src/lib/clock.ts';
import { Unauthenticated } from '../../../src/lib/errors.ts';
import { installSiteErrors } from '../../../src/site/errors.ts';
import { loadSiteJwtKeys } from '../../../src/site/protect/jwt-keys.ts';
import { createJwtIssuer, createJwtVerifier } from '../../../src/site/protect/jwt.ts';
import { siteProtection, type SiteProtectionOptions } from '../../../src/site/protect/plugin.ts';
import type { Capabilities, SiteUser } from '../../../src/site/protect/principal.ts';

const clock = createTestClock(Date.UTC(2026, 0, 15, 12));
const keys = await loadSiteJwtKeys({ alg: 'HS256', masterKey: randomBytes(32), dataDir: '/nonexistent' });
const claims = { keys, issuer: 'http://site.test', audience: 'http://site.test/cms-json', clock };
const issuer = createJwtIssuer({ ...claims, ttlSeconds: 3600 });
const jwt = createJwtVerifier(claims);

const USER_KEY = 'lksk_user';
const DEFAULT_KEY = 'lksk_default';

interface World {
  users: Map<number, SiteUser>;
  capabilityCalls: number;
  options: SiteProtectionOptions;
}

function world(overrides: Partial<SiteProtectionOptions> = {}): World {
  const users = new Map<number, SiteUser>([
    [1, { id: 1, username: 'alice', email: 'alice@example.test', role: 'END_USER', isActive: true, credentialsVersion: 1 }],
  ]);
  const w: World = {
    users,
    capabilityCalls: 0,
    options: {
      methods: ['jwt', 'apikey', 'provider'],
      jwt,
      apiKeys: {
        async verify(key) {
          if (key === USER_KEY) return { id: 7, user: users.get(1)! };
          if (key === DEFAULT_KEY) return { id: 8, user: null };
          throw new Unauthenticated('INVALID_API_KEY', 'apikey');
        },
      },
      provider: {
        async verify(_kind, token) {
          if (token !== 'good') throw new Unauthenticated('INVALID_TOKEN', 'provider', 'token is not active');
          return { user: 'ALICE@example.test', claims: {} };
        },
      },
      findUserById: async (id) => users.get(id),
      findUserByLogin: async (login) => [...users.values()].find((u) => u.email === login.toLowerCase() || u.username === login.toLowerCase()),
      capabilitiesOf: async (): Promise<Capabilities> => {
        w.capabilityCalls += 1;
        return { canRead: true, canWrite: true, isSiteAdmin: false };
      },
      ...overrides,
    },
  };
  return w;
}

async function appWith(options: SiteProtectionOptions): Promise<FastifyInstance> {
  const app = Fastify();
  installSiteErrors(app);
  await app.register(async (scope) => {
    await scope.register(siteProtection, options);
    scope.get('/open', { config: { siteAuth: false } }, async (request) => ({ principal: request.principal }));
    scope.get('/me', async (request) => {
      const { method, userId, username, credentialId } = request.principal;
      const first = await request.principal.capabilities();
      const second = await request.principal.capabilities();
      assert.equal(first, second);
      return { method, userId, username, credentialId: credentialId ?? null, canWrite: first.canWrite };
    });
    scope.post('/me', async (request) => ({ userId: request.principal.userId }));
  });
  app.get('/outside', async () => ({ ok: true }));
  return app;
}

describe('registration checks the options', () => {
  const cases: [string, Partial<SiteProtectionOptions> | Record<string, unknown>, RegExp][] = [
    ['unknown method', { methods: ['jwt', 'saml'] }, /unknown method "saml"/],
    ['methods not an array', { methods: 'jwt' }, /methods must be an array/],
    ['JWT on without a verifier', { jwt: undefined }, /method "jwt" needs the jwt option/],
    ['API keys on without a verifier', { apiKeys: undefined }, /method "apikey" needs the apiKeys option/],
    ['a bad header name', { jwtHeader: 'bad header' }, /jwtHeader must be a header name/],
    ['no user lookup', { findUserById: undefined }, /findUserById must be a function/],
    ['nothing enabled', { methods: ['apitoken'] }, /no credential method is enabled/],
  ];
  for (const [name, overrides, message] of cases) {
    test(name, async () => {
      const app = Fastify();
      app.register(siteProtection, { ...world().options, ...overrides } as SiteProtectionOptions);
      await assert.rejects(async () => { await app.ready(); }, (error: Error) => error instanceof TypeError && message.test(error.message));
    });
  }
});

describe('requests', () => {
  test('a route that opts out takes no credential; routes outside the scope are untouched', async () => {
    const app = await appWith(world().options);
    assert.deepEqual((await app.inject({ url: '/open' })).json(), { principal: null });
    assert.deepEqual((await app.inject({ url: '/outside' })).json(), { ok: true });
    assert.equal((await app.inject({ url: '/me' })).statusCode, 401);
  });

  test('a JWT gives the user as principal; capabilities are resolved once, only when asked', async () => {
    const w = world();
    const app = await appWith(w.options);
    const { token } = await issuer.issue({ sub: '1', name: 'alice', ver: 1 });
    const res = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(res.json(), { method: 'jwt', userId: 1, username: 'alice', credentialId: null, canWrite: true });
    assert.equal(w.capabilityCalls, 1);
    await app.inject({ method: 'POST', url: '/me', headers: { authorization: `Bearer ${token}` } });
    assert.equal(w.capabilityCalls, 1, 'a route that does not ask costs no capability query');
  });

  test('the user is checked on every request: disabled, deleted, or a newer credentials version', async () => {
    const w = world();
    const app = await appWith(w.options);
    const { token } = await issuer.issue({ sub: '1', name: 'alice', ver: 1 });
    const call = () => app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } });
    const revoked = { status: 'error', error: 'INVALID_TOKEN', code: '400', error_description: 'JWT has been revoked.' };
    assert.equal((await call()).statusCode, 200);
    w.users.set(1, { ...w.users.get(1)!, credentialsVersion: 2 });
    assert.deepEqual((await call()).json(), revoked);
    w.users.set(1, { ...w.users.get(1)!, credentialsVersion: 1, isActive: false });
    assert.deepEqual((await call()).json(), revoked);
    w.users.delete(1);
    assert.deepEqual((await call()).json(), revoked);
  });

  test('a JWT whose sub is not a user id is refused', async () => {
    const app = await appWith(world().options);
    const { token } = await issuer.issue({ sub: 'alice', name: 'alice', ver: 1 });
    const res = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(res.json(), { status: 'error', error: 'INVALID_TOKEN', code: '400', error_description: 'JWT "sub" claim is invalid.' });
  });

  test('a user API key acts as the user; an inactive user\'s key is refused', async () => {
    const w = world();
    const app = await appWith(w.options);
    const res = await app.inject({ url: '/me', headers: { authorization: `Bearer ${USER_KEY}` } });
    assert.deepEqual(res.json(), { method: 'apikey', userId: 1, username: 'alice', credentialId: 7, canWrite: true });
    w.users.set(1, { ...w.users.get(1)!, isActive: false });
    const refused = await app.inject({ url: '/me', headers: { authorization: `Bearer ${USER_KEY}` } });
    assert.equal(refused.statusCode, 401);
    assert.deepEqual(refused.json(), { status: 'error', error: 'INVALID_API_KEY', code: '401', error_description: 'API key is invalid or expired.' });
  });

  test('the default key reads (GET, HEAD) and is refused for writes with 403', async () => {
    const w = world();
    const app = await appWith(w.options);
    const headers = { authorization: `Bearer ${DEFAULT_KEY}` };
    const read = await app.inject({ url: '/me', headers });
    assert.deepEqual(read.json(), { method: 'apikey', userId: null, username: null, credentialId: 8, canWrite: false });
    assert.equal((await app.inject({ method: 'HEAD', url: '/me', headers })).statusCode, 200);
    const write = await app.inject({ method: 'POST', url: '/me', headers });
    assert.equal(write.statusCode, 403);
    assert.deepEqual(write.json(), {
      status: 'error', error: 'FORBIDDEN', code: '403',
      error_description: 'The site API key is read-only: only GET and HEAD requests are allowed.',
    });
    assert.equal(w.capabilityCalls, 0);
  });

  test('a provider token is mapped to the user by its claim, case-insensitively', async () => {
    const app = await appWith(world().options);
    const res = await app.inject({ url: '/me', headers: { access_token: 'good' } });
    assert.deepEqual(res.json(), { method: 'provider', userId: 1, username: 'alice', credentialId: null, canWrite: true });
    const bad = await app.inject({ url: '/me', headers: { access_token: 'bad' } });
    assert.deepEqual(bad.json(), { status: 'error', error: 'INVALID_TOKEN', code: '400', error_description: 'token is not active' });
  });

  test('custom header names', async () => {
    const app = await appWith({ ...world().options, jwtHeader: 'X-Site-JWT', apiKeyHeader: 'X-Api-Key' });
    const { token } = await issuer.issue({ sub: '1', name: 'alice', ver: 1 });
    assert.equal((await app.inject({ url: '/me', headers: { 'x-site-jwt': token } })).statusCode, 200);
    assert.equal((await app.inject({ url: '/me', headers: { 'x-api-key': USER_KEY } })).statusCode, 200);
    const missing = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(missing.json(), {
      status: 'error', error: 'MISSING_AUTHORIZATION_HEADER', code: '401',
      error_description: 'X-Site-Jwt or X-Api-Key or access_token or id_token header is missing.',
    });
  });
});
