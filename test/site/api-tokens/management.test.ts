import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { SYSTEM } from '../../../src/audit/context.ts';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { basic, bearer, buildTokenSite, DAY, INVALID, ISO, json, PASSWORD, SECRET, type TokenSite } from './harness.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const siteError = (status: number, error: string, description: string) => ({ status: 'error', error, code: String(status), error_description: description });
const NOT_FOUND = siteError(404, 'NOT_FOUND', 'API token not found');
const NOT_OWNER = siteError(403, 'FORBIDDEN', "only a site administrator may manage another user's API tokens");

async function createViaApi(site: TokenSite, authorization: string, body: Record<string, unknown>) {
  const res = await site.request('POST', '/rest/api/2/tokens', authorization, body);
  const created = json(res, 201);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.match(created.token, SECRET);
  return created;
}

describeEachStore('API token management', (kind) => {
  test('create with the password, then use the token: the secret is shown once', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const now = site.clock.now();
    const created = await createViaApi(site, basic('alice', PASSWORD), { name: 'CI pipeline', type: 'bearer', expiresInDays: 30 });
    assert.deepEqual(created, {
      id: created.id, name: 'CI pipeline', type: 'bearer', username: 'alice',
      createdAt: iso(now), expiresAt: iso(now + 30 * DAY), lastUsedAt: null, expired: false, token: created.token,
    });
    assert.ok(Number.isSafeInteger(created.id));
    assert.equal(json(await site.get('/rest/api/2/myself', bearer(created.token)), 200).name, 'alice');

    const listed = json(await site.get('/rest/api/2/tokens', basic('alice', PASSWORD)), 200);
    assert.deepEqual(listed, [{
      id: created.id, name: 'CI pipeline', type: 'bearer', username: 'alice',
      createdAt: iso(now), expiresAt: iso(now + 30 * DAY), lastUsedAt: iso(now), expired: false,
    }]);
    assert.ok(!JSON.stringify(listed).includes(created.token));
  });

  test('an existing token (Basic or Bearer) manages its owner\'s tokens; an e-mail works as the Basic username', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice', { email: 'alice@example.test' });
    const first = await site.token(alice, 'basic');
    const viaBasic = await createViaApi(site, basic('Alice@Example.test', first.secret), { name: 'second', type: 'basic' });
    const viaBearer = await createViaApi(site, bearer((await site.token(alice, 'bearer')).secret), { name: 'third', type: 'bearer' });
    json(await site.get('/rest/api/2/myself', basic('alice', viaBasic.token)), 200);
    json(await site.get('/rest/api/2/myself', bearer(viaBearer.token)), 200);
    const names = json(await site.get('/rest/api/2/tokens', basic('alice@example.test', PASSWORD)), 200).map((x: { name: string }) => x.name);
    assert.deepEqual(names, ['basic token', 'second', 'bearer token', 'third']);
  });

  test('wrong passwords, unknown users, disabled users and bad headers are refused with the token body', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const ck = site.customer.customerKey;
    const body = { name: 'x', type: 'bearer' };
    for (const authorization of [basic('alice', 'wrong password'), basic('nobody', PASSWORD), basic('alice', ''), 'Bearer lkat_nope']) {
      const res = await site.request('POST', '/rest/api/2/tokens', authorization, body);
      assert.equal(res.statusCode, 401, authorization);
      assert.deepEqual(res.json(), INVALID);
    }
    // Other credentials are the site's, with the site's errors.
    const missing = await site.site.inject({ method: 'GET', url: '/rest/api/2/tokens' });
    assert.deepEqual(json(missing, 401), siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'Authorization header is missing.'));
    for (const authorization of ['Digest abc', 'Basic !!!']) {
      assert.deepEqual(json(await site.request('POST', '/rest/api/2/tokens', authorization, body), 400),
        siteError(400, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'Authorization header token type must be Bearer.'));
    }
    assert.deepEqual(json(await site.request('POST', '/rest/api/2/tokens', 'Bearer not.a.jwt', body), 400),
      siteError(400, 'SEGMENT_FAULT', 'JWT format is incorrect.'));
    json(await site.admin.post('/admin/users/disable', { customerKey: ck, username: 'alice' }), 200);
    const disabled = await site.request('GET', '/rest/api/2/tokens', basic('alice', PASSWORD));
    assert.equal(disabled.statusCode, 401);
    assert.deepEqual(disabled.json(), INVALID);
  });

  test('password failures are throttled with the token endpoint; a user with an authenticator app needs a JWT', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '2' });
    await site.createUser('alice');
    const wrong = basic('alice', 'wrong password');
    for (let i = 0; i < 2; i++) assert.deepEqual(json(await site.get('/rest/api/2/tokens', wrong), 401), INVALID);
    const blocked = await site.get('/rest/api/2/tokens', basic('alice', PASSWORD));
    assert.deepEqual(json(blocked, 429), siteError(429, 'TOO_MANY_REQUESTS', 'Too many failed logins: try again later.'));
    assert.equal(blocked.headers['retry-after'], '1');
    // The token endpoint shares the counters.
    const login = await site.site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'alice', password: PASSWORD } });
    assert.equal(login.statusCode, 429);
    site.clock.advance(1000);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', basic('alice', PASSWORD)), 200), []);

    const { mfa } = site.composition.services;
    const registration = await mfa.register(site.customerId, { login: 'alice', customerDisplayName: 'Test' });
    await mfa.validate(site.customerId, { login: 'alice', secret: registration.secret, otp: totpAt(registration.secret, site.clock.now()) }, SYSTEM);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', basic('alice', PASSWORD)), 403), siteError(403, 'FORBIDDEN',
      'this user signs in with an authenticator app: use a JWT from the token endpoint (with the one-time code) instead of the password'));
    site.clock.advance(30_000);
    const jwt = json(await site.site.inject({
      method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'alice', password: PASSWORD, otp: totpAt(registration.secret, site.clock.now()) },
    }), 200).jwt_token;
    assert.equal((await createViaApi(site, bearer(jwt), { name: 'with mfa', type: 'bearer' })).username, 'alice');
  });

  test('a site JWT or a user API key manages tokens too; the site default key does not', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const login = json(await site.site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'alice', password: PASSWORD } }), 200);
    const viaJwt = await createViaApi(site, bearer(login.jwt_token), { name: 'from jwt', type: 'bearer' });
    assert.equal(viaJwt.username, 'alice');
    const { apiKey } = await site.composition.services.siteApiKeys.create(site.customerId, { login: 'alice' }, SYSTEM);
    const listed = json(await site.get('/rest/api/2/tokens', bearer(apiKey)), 200);
    assert.deepEqual(listed.map((x: { name: string }) => x.name), ['from jwt']);
    const defaultKey = (await site.composition.services.siteApiKeys.create(site.customerId, {}, SYSTEM)).apiKey;
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', bearer(defaultKey)), 403),
      siteError(403, 'FORBIDDEN', 'this credential does not belong to a user'));
    assert.equal((await site.request('POST', '/rest/api/2/tokens', bearer(defaultKey), { name: 'x', type: 'basic' })).statusCode, 403);
    assert.deepEqual(json(await site.get('/rest/api/2/myself', bearer(defaultKey)), 403),
      siteError(403, 'FORBIDDEN', 'this credential does not belong to a user'));
  });

  test('read one token, revoke it, delete the expired ones', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const auth = basic('alice', PASSWORD);
    const start = site.clock.now();
    const short = await site.token(alice, 'bearer', { expiresInDays: 1, name: 'short' });
    const long = await site.token(alice, 'basic', { expiresInDays: 10, name: 'long' });

    assert.deepEqual(json(await site.get(`/rest/api/2/tokens/${short.id}`, auth), 200), {
      id: short.id, name: 'short', type: 'bearer', username: 'alice',
      createdAt: iso(start), expiresAt: iso(start + DAY), lastUsedAt: null, expired: false,
    });

    site.clock.advance(2 * DAY);
    assert.equal(json(await site.get(`/rest/api/2/tokens/${short.id}`, auth), 200).expired, true);
    assert.deepEqual(json(await site.request('DELETE', '/rest/api/2/tokens/expired', auth), 200), { deleted: 1 });
    assert.deepEqual(json(await site.request('DELETE', '/rest/api/2/tokens/expired', auth), 200), { deleted: 0 });
    assert.deepEqual(json(await site.get(`/rest/api/2/tokens/${short.id}`, auth), 404), NOT_FOUND);

    const revoke = await site.request('DELETE', `/rest/api/2/tokens/${long.id}`, auth);
    assert.equal(revoke.statusCode, 204);
    assert.equal(revoke.body, '');
    assert.deepEqual(json(await site.request('DELETE', `/rest/api/2/tokens/${long.id}`, auth), 404), NOT_FOUND);
    const res = await site.get('/rest/api/2/myself', basic('alice', long.secret));
    assert.equal(res.statusCode, 401);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', auth), 200), []);
  });

  test("a user cannot see or touch another user's tokens", async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice', { email: 'alice@example.test' });
    const bob = await site.createUser('bob');
    const bobs = await site.token(bob, 'bearer');
    const auth = basic('alice', PASSWORD);
    assert.deepEqual(json(await site.get(`/rest/api/2/tokens/${bobs.id}`, auth), 404), NOT_FOUND);
    assert.deepEqual(json(await site.request('DELETE', `/rest/api/2/tokens/${bobs.id}`, auth), 404), NOT_FOUND);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens?username=bob', auth), 403), NOT_OWNER);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens?username=nobody', auth), 403), NOT_OWNER);
    assert.deepEqual(json(await site.request('DELETE', '/rest/api/2/tokens/expired?username=bob', auth), 403), NOT_OWNER);
    assert.deepEqual(json(await site.request('POST', '/rest/api/2/tokens', auth, { name: 'x', type: 'basic', username: 'bob' }), 403), NOT_OWNER);
    // Naming oneself (by username or e-mail) is fine.
    assert.deepEqual(json(await site.get('/rest/api/2/tokens?username=ALICE@example.test', auth), 200), []);
    json(await site.get('/rest/api/2/myself', bearer(bobs.secret)), 200);
  });

  test("a site administrator manages anyone's tokens", async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createAdmin('root');
    const bob = await site.createUser('bob');
    const auth = basic('root', PASSWORD);
    const start = site.clock.now();
    const made = await createViaApi(site, auth, { name: 'for bob', type: 'basic', username: 'bob', expiresInDays: 1 });
    assert.equal(made.username, 'bob');
    json(await site.get('/rest/api/2/myself', basic('bob', made.token)), 200);
    const old = await site.token(bob, 'bearer', { expiresInDays: 1, name: 'old' });

    const listed = json(await site.get('/rest/api/2/tokens?username=bob', auth), 200);
    assert.deepEqual(listed.map((x: { id: number }) => x.id), [made.id, old.id]);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', auth), 200), []);
    assert.equal(json(await site.get(`/rest/api/2/tokens/${old.id}`, auth), 200).username, 'bob');
    assert.equal((await site.request('DELETE', `/rest/api/2/tokens/${old.id}`, auth)).statusCode, 204);

    site.clock.advance(DAY);
    assert.deepEqual(json(await site.request('DELETE', '/rest/api/2/tokens/expired?username=bob', auth), 200), { deleted: 1 });
    assert.deepEqual(json(await site.get('/rest/api/2/tokens?username=nobody', auth), 404), siteError(404, 'NOT_FOUND', 'Invalid username or email.'));
    assert.equal(start + DAY, site.clock.now());
  });

  test('requests are validated with messages that name the field', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const auth = basic('alice', PASSWORD);
    const bad = (description: string) => siteError(400, 'BAD_REQUEST', description);
    const cases: [unknown, string][] = [
      [{ type: 'bearer' }, 'name is required'],
      [{ name: 'x' }, 'type is required'],
      [{ name: 'x', type: 'digest' }, 'type must be equal to one of the allowed values'],
      [{ name: '', type: 'basic' }, 'name must NOT have fewer than 1 characters'],
      [{ name: 'x'.repeat(101), type: 'basic' }, 'name must NOT have more than 100 characters'],
      [{ name: 'x', type: 'basic', expiresInDays: 0 }, 'expiresInDays must be >= 1'],
      [{ name: 'x', type: 'basic', expiresInDays: '5' }, 'expiresInDays must be integer'],
      [{ name: 'x', type: 'basic', expiresAt: 'tomorrow' }, 'expiresAt must match format "date-time"'],
      [{ name: 'x', type: 'basic', expiresAt: iso(site.clock.now() - 1000) }, 'expiresAt must be in the future'],
      [{ name: 'x', type: 'basic', expiresInDays: 1, expiresAt: iso(site.clock.now() + DAY) }, 'expiresAt cannot be combined with expiresInDays'],
    ];
    for (const [body, description] of cases) {
      assert.deepEqual(json(await site.request('POST', '/rest/api/2/tokens', auth, body), 400), bad(description), JSON.stringify(body));
    }
    assert.deepEqual(json(await site.get('/rest/api/2/tokens/abc', auth), 400), bad('id must match pattern "^[1-9][0-9]{0,14}$"'));
    assert.deepEqual(json(await site.get('/rest/api/2/tokens/99999999999', auth), 404), NOT_FOUND);
    assert.deepEqual(json(await site.get('/rest/api/2/tokens', auth), 200), []);
  });

  test('secrets are stored only as SHA-256 and never logged', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_LOG_LEVEL: 'info' });
    // Through the service: the identity face would log to stdout at this level.
    await site.composition.services.users.create(site.customerId, {
      username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', password: PASSWORD, customAttributes: {},
    }, SYSTEM);
    const created = await createViaApi(site, basic('alice', PASSWORD), { name: 'secretive', type: 'basic' });
    json(await site.get('/rest/api/2/myself', basic('alice', created.token)), 200);
    const rows = await site.composition.store.db.selectFrom('api_tokens').selectAll().where('id', '=', created.id).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].token_hash, createHash('sha256').update(created.token).digest('hex'));
    assert.ok(!JSON.stringify(rows).includes(created.token));
    assert.ok(site.logs.length > 0);
    const logged = site.logs.join('\n');
    for (const secret of [created.token, PASSWORD, Buffer.from(`alice:${created.token}`).toString('base64')]) assert.ok(!logged.includes(secret));
  });

  test('an expiresAt date is honoured exactly', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const at = site.clock.now() + 5 * DAY + 1234;
    const created = await createViaApi(site, basic('alice', PASSWORD), { name: 'dated', type: 'basic', expiresAt: iso(at) });
    assert.equal(created.expiresAt, iso(at));
    assert.match(created.createdAt, ISO);
  });
});
