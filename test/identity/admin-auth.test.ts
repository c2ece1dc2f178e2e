/**
 * The admin request signature (spec, Authentication; DESIGN.md, identity decisions): what is
 * accepted, what is refused, the exact unauthorised body of every route, and the replay guard.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { signRequest } from '../../src/identity/admin-auth.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { createReplayGuard } from '../../src/identity/replay-guard.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';

// Opened here, not inside the first test: the helper registers the schema's clean-up with after(),
// which, called inside a test, runs when that test ends and closes the store under the rest.
if (postgresUrl) await postgresStore();

const DENIED = 'API Request denied: Incorrect Authorization header.';
const STANDARD_DENIED = { status: 'ERROR', code: '401', message: DENIED };

/** The three signed headers for `customer` at `timestampMs`, computed as a client would. */
function signedHeaders(customer: CreatedCustomer, timestampMs: number, apiKey = customer.apiKey): Record<string, string> {
  const timestamp = String(timestampMs);
  return { 'customer-key': customer.customerKey, timestamp, authorization: signRequest(customer.customerKey, timestamp, apiKey) };
}

function count(app: TestApp, headers: Record<string, string>, prefix = '/api'): Promise<LightMyRequestResponse> {
  return app.identity.inject({ method: 'GET', url: `${prefix}/admin/users/stats/count`, headers });
}

function post(app: TestApp, url: string, body: unknown, headers: Record<string, string>): Promise<LightMyRequestResponse> {
  return app.identity.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
}

function assertCountOk(response: LightMyRequestResponse, expected = 0): void {
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual(response.json(), { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: expected } });
}

function assertDenied(response: LightMyRequestResponse): void {
  assert.equal(response.statusCode, 401, response.body);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  assert.deepEqual(response.json(), STANDARD_DENIED);
}

/** Every signed admin route of the app (the docs and the OpenAPI document are public). */
function adminRoutes(app: TestApp): { method: string; url: string }[] {
  return app.identity.registeredRoutes.filter((r) =>
    (r.url.startsWith('/api/') || r.url.startsWith('/moas/api/'))
    && !r.url.startsWith('/api/docs') && r.url !== '/api/openapi.json');
}

describeEachStore('admin request signature', (kind) => {
  test('a correctly signed request is accepted, on /api and /moas/api', async (t) => {
    const app = await build(t, kind);
    const headers = signedHeaders(app.customer, app.clock.now());
    assertCountOk(await count(app, headers));
    assertCountOk(await count(app, headers, '/moas/api'));
  });

  test('a wrong digest, an uppercase digest and a digest made with another customer\'s key are refused', async (t) => {
    const app = await build(t, kind);
    const other = await app.newCustomer();
    const now = app.clock.now();
    const good = signedHeaders(app.customer, now);

    assertDenied(await count(app, { ...good, authorization: good.authorization.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }));
    assertDenied(await count(app, { ...good, authorization: good.authorization.toUpperCase() }));
    assertDenied(await count(app, { ...good, authorization: 'not a digest' }));
    // Customer A's key header with the digest B's API key gives (and the other way round).
    assertDenied(await count(app, signedHeaders(app.customer, now, other.customer.apiKey)));
    assertDenied(await count(app, { ...signedHeaders(other.customer, now), 'customer-key': app.customer.customerKey }));
    // The same headers, correctly signed, pass: the refusals above are about the digest.
    assertCountOk(await count(app, good));
  });

  test('each missing header is refused', async (t) => {
    const app = await build(t, kind);
    const good = signedHeaders(app.customer, app.clock.now());
    for (const name of ['customer-key', 'timestamp', 'authorization']) {
      const headers = { ...good };
      delete headers[name];
      assertDenied(await count(app, headers));
    }
    assertDenied(await count(app, {}));
  });

  test('a Customer-Key or Timestamp that is not all digits is refused, even when the digest matches it', async (t) => {
    const app = await build(t, kind);
    const now = app.clock.now();
    const { customerKey, apiKey } = app.customer;
    for (const timestamp of [`${now}.0`, `+${now}`, `-${now}`, `${now}abc`, `0x${now.toString(16)}`, `${now / 1000}e3`]) {
      assertDenied(await count(app, { 'customer-key': customerKey, timestamp, authorization: signRequest(customerKey, timestamp, apiKey) }));
    }
    for (const key of [`${customerKey}a`, `+${customerKey}`, `${customerKey}.0`, `-${customerKey}`]) {
      const timestamp = String(now);
      assertDenied(await count(app, { 'customer-key': key, timestamp, authorization: signRequest(key, timestamp, apiKey) }));
    }
  });

  test('the timestamp must be within 300 s of the server clock, either way', async (t) => {
    const app = await build(t, kind);
    const now = app.clock.now();
    assertDenied(await count(app, signedHeaders(app.customer, now - 301_000)));
    assertDenied(await count(app, signedHeaders(app.customer, now + 301_000)));
    assertCountOk(await count(app, signedHeaders(app.customer, now - 299_000)));
    assertCountOk(await count(app, signedHeaders(app.customer, now + 299_000)));
    // The same request becomes stale when the server clock moves on.
    const headers = signedHeaders(app.customer, now + 1);
    app.clock.advance(301_002);
    assertDenied(await count(app, headers));
  });

  test('an unknown customer key is refused', async (t) => {
    const app = await build(t, kind);
    const impostor = { customerId: 0, customerKey: '999999999999', apiKey: app.customer.apiKey };
    assertDenied(await count(app, signedHeaders(impostor, app.clock.now())));
  });

  test('a triple may be reused within the 2 s grace, not after', async (t) => {
    const app = await build(t, kind);
    const headers = signedHeaders(app.customer, app.clock.now());
    assertCountOk(await count(app, headers));
    assertCountOk(await count(app, headers));
    app.clock.advance(1_000);
    assertCountOk(await count(app, headers, '/moas/api'));
    app.clock.advance(1_100);
    assertDenied(await count(app, headers));
    assertDenied(await count(app, headers, '/moas/api'));
    // A fresh signature still works: the refusal is about the reuse.
    assertCountOk(await count(app, signedHeaders(app.customer, app.clock.now())));
  });

  test('the Api-Key header is optional; when sent it must be the API key', async (t) => {
    const app = await build(t, kind);
    const other = await app.newCustomer();
    const now = app.clock.now();
    assertCountOk(await count(app, { ...signedHeaders(app.customer, now), 'api-key': app.customer.apiKey }));
    assertDenied(await count(app, { ...signedHeaders(app.customer, now + 1), 'api-key': other.customer.apiKey }));
    assertDenied(await count(app, { ...signedHeaders(app.customer, now + 2), 'api-key': `${app.customer.apiKey}x` }));
    assertDenied(await count(app, { ...signedHeaders(app.customer, now + 3), 'api-key': '' }));
  });

  test('a body customerKey other than the header\'s is refused, as a number and as a string', async (t) => {
    const app = await build(t, kind);
    const other = await app.newCustomer();
    const now = app.clock.now();
    const page = { batchSize: 10, batchNo: 1 };
    let ts = now;
    for (const customerKey of [Number(other.customer.customerKey), other.customer.customerKey, `0${app.customer.customerKey}`, 1e20]) {
      assertDenied(await post(app, '/api/admin/groups/getall', { customerKey, ...page }, signedHeaders(app.customer, ts++)));
    }
    for (const customerKey of [Number(app.customer.customerKey), app.customer.customerKey]) {
      const response = await post(app, '/api/admin/groups/getall', { customerKey, ...page }, signedHeaders(app.customer, ts++));
      assert.equal(response.statusCode, 200, response.body);
    }
  });

  test('every admin route answers its own unauthorised body, under /api and /moas/api', async (t) => {
    const app = await build(t, kind);
    const routes = adminRoutes(app);
    assert.ok(routes.length >= 28, `only ${routes.length} admin routes found`);
    assert.ok(routes.some((r) => r.url === '/moas/api/admin/users/disable'));
    const bad = { ...signedHeaders(app.customer, app.clock.now()), authorization: 'f'.repeat(128) };
    const body = { customerKey: Number(app.customer.customerKey), username: 'someone', batchSize: 1, batchNo: 1 };
    for (const route of routes) {
      const response = route.method === 'GET'
        ? await app.identity.inject({ method: 'GET', url: route.url, headers: bad })
        : await post(app, route.url, body, bad);
      const where = `${route.method} ${route.url}`;
      if (/\/admin\/users\/(disable|enable)$/.test(route.url)) {
        assert.equal(response.statusCode, 400, where);
        assert.match(String(response.headers['content-type']), /^text\/plain/, where);
        assert.equal(response.body, `API Authorization: ${DENIED}`, where);
      } else if (route.url.endsWith('/admin/users/change-password')) {
        assert.equal(response.statusCode, 401, where);
        assert.deepEqual(response.json(), { status: 'error', code: '401', message: DENIED }, where);
      } else {
        assert.equal(response.statusCode, 401, where);
        assert.deepEqual(response.json(), STANDARD_DENIED, where);
      }
      assert.match(String(response.headers['x-request-id']), /\S/, where);
    }
  });

  test('a body customerKey mismatch on disable and change-password gets those routes\' bodies', async (t) => {
    const app = await build(t, kind);
    const other = await app.newCustomer();
    const now = app.clock.now();
    const disable = await post(app, '/moas/api/admin/users/disable', { customerKey: other.customer.customerKey, username: 'x' }, signedHeaders(app.customer, now));
    assert.equal(disable.statusCode, 400);
    assert.equal(disable.body, `API Authorization: ${DENIED}`);
    const change = await post(app, '/api/admin/users/change-password',
      { customerKey: other.customer.customerKey, username: 'x', password: 'new password 1', oldPassword: 'old password 1' }, signedHeaders(app.customer, now + 1));
    assert.equal(change.statusCode, 401);
    assert.deepEqual(change.json(), { status: 'error', code: '401', message: DENIED });
  });

  test('a refused request changes nothing', async (t) => {
    const app = await build(t, kind);
    const other = await app.newCustomer();
    const now = app.clock.now();
    const wrongKey = signedHeaders(app.customer, now, other.customer.apiKey);
    const user = { customerKey: Number(app.customer.customerKey), username: 'refused.user', email: 'refused@example.test', firstName: 'R', lastName: 'U' };

    assertDenied(await post(app, '/api/admin/users/create', user, wrongKey));
    assertDenied(await post(app, '/moas/api/admin/users/create', user, wrongKey));
    // The right signature with another customer's key in the body is refused too.
    assertDenied(await post(app, '/api/admin/users/create', { ...user, customerKey: other.customer.customerKey }, signedHeaders(app.customer, now + 1)));
    assert.equal(await app.composition.services.users.findByLogin(app.customer.customerId, 'refused.user'), undefined);
    assert.equal(await app.composition.services.users.findByLogin(other.customer.customerId, 'refused.user'), undefined);
    assertCountOk(await count(app, signedHeaders(app.customer, now + 2)));

    // An existing user stays enabled when a disable is refused.
    const created = await post(app, '/api/admin/users/create', user, signedHeaders(app.customer, now + 3));
    assert.equal(created.statusCode, 200, created.body);
    const refused = await post(app, '/api/admin/users/disable', { customerKey: app.customer.customerKey, username: 'refused.user' }, wrongKey);
    assert.equal(refused.statusCode, 400);
    const stored = await app.composition.services.users.findByLogin(app.customer.customerId, 'refused.user');
    assert.equal(stored?.isDisabled, false);
  });
});

describe('replay guard', () => {
  const digest = (n: number) => createHash('sha512').update(String(n)).digest('hex');

  test('admits a digest again within the grace, refuses it after', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: 2000, windowMs: 300_000 });
    const ts = clock.now();
    assert.equal(guard.admit(1, digest(1), ts), true);
    clock.advance(2000);
    assert.equal(guard.admit(1, digest(1), ts), true);
    clock.advance(1);
    assert.equal(guard.admit(1, digest(1), ts), false);
    assert.equal(guard.admit(1, digest(2), ts), true);
  });

  test('a zero grace refuses every second use', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: 0, windowMs: 300_000 });
    assert.equal(guard.admit(1, digest(1), clock.now()), true);
    clock.advance(1);
    assert.equal(guard.admit(1, digest(1), clock.now() - 1), false);
  });

  test('forgets entries once their timestamp has left the window', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: 2000, windowMs: 300_000 });
    const ts = clock.now();
    for (let i = 0; i < 100; i++) guard.admit(1, digest(i), ts);
    // Timestamped later: lives longer.
    guard.admit(1, digest(1000), ts + 60_000);
    assert.equal(guard.size(), 101);
    clock.advance(300_000);
    guard.admit(1, digest(2000), clock.now());
    assert.equal(guard.size(), 102, 'nothing expires while its timestamp is still inside the window');
    clock.advance(10_000);
    guard.admit(1, digest(3000), clock.now());
    assert.equal(guard.size(), 3, 'the 100 early entries are swept; the later one and the new ones stay');
  });

  test('sweep() forgets expired entries without a request', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: 2000, windowMs: 300_000 });
    for (let i = 0; i < 10; i++) guard.admit(1, digest(i), clock.now());
    // Entries are kept to the second: forgotten within a second after their timestamp leaves the window.
    clock.advance(301_000);
    assert.equal(guard.size(), 10);
    guard.sweep();
    assert.equal(guard.size(), 0);
  });

  test('is bounded: when full of live entries it refuses new digests, and recovers when they expire', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: 2000, windowMs: 300_000, maxEntries: 3 });
    const ts = clock.now();
    for (let i = 0; i < 3; i++) assert.equal(guard.admit(1, digest(i), ts), true);
    assert.equal(guard.admit(1, digest(3), ts), false, 'fails closed when full');
    assert.equal(guard.admit(1, digest(0), ts), true, 'a known digest within its grace still passes');
    for (let i = 10; i < 1000; i++) guard.admit(1, digest(i), ts);
    assert.equal(guard.size(), 3);
    clock.advance(301_000);
    assert.equal(guard.admit(1, digest(4), clock.now()), true);
    assert.equal(guard.size(), 1);
  });
});
