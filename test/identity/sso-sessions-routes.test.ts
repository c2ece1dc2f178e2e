/**
 * POST /api/admin/users/sessions/revoke (and /moas/api): signed; every SSO session of the user ends
 * (another user's stay); an unknown user answers as users/get; bad bodies get the standard 400.
 * Bodies asserted whole, on both stores.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { json } from '../helpers/http.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const browser = { userAgent: 'Mozilla/5.0 (test)', address: '203.0.113.7' };
const REVOKED = { status: 'SUCCESS', message: "The user's sessions have been revoked." };

async function newUser(env: TestApp, username: string) {
  const { customerId } = env.customer;
  await env.composition.services.users.create(customerId, {
    username, email: `${username}@example.test`, firstName: 'Sam', lastName: 'Session', customAttributes: {},
  }, SYSTEM);
  return (await env.composition.services.users.findByLogin(customerId, username))!;
}

describeEachStore('users/sessions/revoke', (kind) => {
  test("ends every session of the user, by username or e-mail, and no one else's; also under /moas/api", async (t) => {
    const env = await build(t, kind);
    const sessions = env.composition.services.ssoSessions;
    const { customerId } = env.customer;
    const alice = await newUser(env, 'alice');
    const bob = await newUser(env, 'bob');
    const a1 = await sessions.open(customerId, alice.id, ['pwd'], browser);
    const a2 = await sessions.open(customerId, alice.id, ['email'], { ...browser, userAgent: 'Other browser' });
    const b1 = await sessions.open(customerId, bob.id, ['pwd'], browser);
    assert.equal((await sessions.listForUser(customerId, alice.id)).length, 2);

    const res = await env.admin.post('/admin/users/sessions/revoke', { customerKey: env.customer.customerKey, username: 'alice' });
    assert.deepStrictEqual(json(res, 200), REVOKED);
    assert.equal(await sessions.current(customerId, a1.value), undefined);
    assert.equal(await sessions.current(customerId, a2.value), undefined);
    assert.deepEqual(await sessions.listForUser(customerId, alice.id), []);
    assert.ok(await sessions.current(customerId, b1.value), "bob's session stays");

    // Nothing left to end is no error (idempotent); the e-mail names the user too.
    assert.deepStrictEqual(json(await env.admin.post('/admin/users/sessions/revoke', { customerKey: Number(env.customer.customerKey), username: 'alice@example.test' }), 200), REVOKED);

    const moas = await env.identity.inject({
      method: 'POST', url: '/moas/api/admin/users/sessions/revoke',
      headers: { 'content-type': 'application/json', ...env.admin.headers() },
      payload: JSON.stringify({ customerKey: env.customer.customerKey, username: 'BOB@example.test' }),
    });
    assert.deepStrictEqual(json(moas, 200), REVOKED);
    assert.equal(await sessions.current(customerId, b1.value), undefined);
  });

  test("unsigned or another customer's signature: 401, nothing ends; another customer's user is unknown", async (t) => {
    const env = await build(t, kind);
    const sessions = env.composition.services.ssoSessions;
    const { customerId } = env.customer;
    const alice = await newUser(env, 'alice');
    const open = await sessions.open(customerId, alice.id, ['pwd'], browser);
    const body = JSON.stringify({ customerKey: env.customer.customerKey, username: 'alice' });

    const unsigned = await env.identity.inject({ method: 'POST', url: '/api/admin/users/sessions/revoke', headers: { 'content-type': 'application/json' }, payload: body });
    assert.deepStrictEqual(json(unsigned, 401), { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' });
    const wrong = await env.identity.inject({
      method: 'POST', url: '/api/admin/users/sessions/revoke',
      headers: { 'content-type': 'application/json', ...env.admin.headers(), authorization: '0'.repeat(128) }, payload: body,
    });
    assert.equal(wrong.statusCode, 401);
    const other = await env.newCustomer();
    // The other customer's signature with this customer's key in the body: refused as unauthorised.
    assert.equal((await other.admin.post('/admin/users/sessions/revoke', { customerKey: env.customer.customerKey, username: 'alice' })).statusCode, 401);
    assert.deepStrictEqual(json(await other.admin.post('/admin/users/sessions/revoke', { customerKey: other.customer.customerKey, username: 'alice' }), 404),
      { username: 'alice', status: 'FAILED', message: 'Invalid username or email.' });
    assert.ok(await sessions.current(customerId, open.value), 'the session is still open');
  });

  test('an unknown user answers as users/get; bad bodies get the standard 400', async (t) => {
    const env = await build(t, kind);
    const ck = env.customer.customerKey;
    const revoke = (body: unknown) => env.admin.post('/admin/users/sessions/revoke', body);
    const get = await env.admin.post('/admin/users/get', { customerKey: ck, username: 'nobody' });
    const unknown = await revoke({ customerKey: ck, username: 'nobody' });
    assert.deepStrictEqual(json(unknown, 404), json(get, 404));
    assert.deepStrictEqual(json(unknown, 404), { username: 'nobody', status: 'FAILED', message: 'Invalid username or email.' });

    const bad = (message: string) => ({ status: 'ERROR', code: '400', message });
    assert.deepStrictEqual(json(await revoke({ customerKey: ck }), 400), bad('username is required'));
    assert.deepStrictEqual(json(await revoke({ username: 'alice' }), 400), bad('customerKey is required'));
    assert.deepStrictEqual(json(await revoke({ customerKey: ck, username: 42 }), 400), bad('username must be string'));
    assert.deepStrictEqual(json(await revoke({ customerKey: ck, username: '' }), 400), bad('username must NOT have fewer than 1 characters'));
    assert.deepStrictEqual(json(await revoke([]), 400), bad('body must be object'));
    assert.deepStrictEqual(json(await revoke('{"customerKey":'), 400), bad('request body is not valid JSON'));
    const plain = await env.identity.inject({
      method: 'POST', url: '/api/admin/users/sessions/revoke', headers: { 'content-type': 'text/plain', ...env.admin.headers() }, payload: 'x',
    });
    assert.deepStrictEqual(json(plain, 415), { status: 'ERROR', code: '415', message: 'Content-Type must be application/json' });
  });
});
