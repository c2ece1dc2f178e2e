/**
 * Issue 13 item 2: concurrent guesses cannot get past the token endpoint's throttle. Each attempt is
 * reserved atomically before the password check, so N concurrent guesses get at most the budget of
 * checks (counted by a spy on the users service's verifyCredentials and on the authenticator check);
 * the budget is per user (username and e-mail share one), unknown names behave the same.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { buildSite, PASSWORD, siteError, TOKEN_PATH, type SiteTest } from './helpers.ts';

if (postgresUrl) await postgresStore();

const BUDGET = 5;
const GUESSES = 30;
const INVALID = siteError(400, 'INVALID_CREDENTIALS', 'Invalid username or password.');
const THROTTLED = siteError(429, 'TOO_MANY_REQUESTS', 'Too many failed logins: try again later.');
const GA = 'GOOGLE AUTHENTICATOR';

function login(s: SiteTest, body: Record<string, unknown>, remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> {
  return s.inject({ method: 'POST', url: TOKEN_PATH, payload: body, remoteAddress });
}

/** The site with a counter on every password check the token endpoint makes. */
async function countingSite(t: TestContext, kind: StoreKind): Promise<SiteTest & { checks(): number }> {
  const s = await buildSite(t, kind);
  const spy = t.mock.method(s.composition.services.users, 'verifyCredentials');
  return Object.assign(s, { checks: () => spy.mock.callCount() });
}

/** Splits answers into the 400 INVALID_CREDENTIALS and the 429 (with Retry-After), asserting each body whole. */
function tally(results: LightMyRequestResponse[]): { invalid: number; throttled: number } {
  let invalid = 0;
  let throttled = 0;
  for (const res of results) {
    if (res.statusCode === 400) {
      assert.deepEqual(res.json(), INVALID);
      invalid++;
    } else {
      assert.equal(res.statusCode, 429, res.body);
      assert.deepEqual(res.json(), THROTTLED);
      assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
      throttled++;
    }
  }
  return { invalid, throttled };
}

// Each test logs in from its own addresses: on PostgreSQL the tests of a file share one database.
const concurrently = <T>(n: number, make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));

describeEachStore('token endpoint: concurrent guesses and the throttle', (kind) => {
  test(`${GUESSES} concurrent wrong passwords for one user: ${BUDGET} checked, the rest 429`, async (t) => {
    const s = await countingSite(t, kind);
    await s.addUser('alice');
    const results = await concurrently(GUESSES, () => login(s, { username: 'alice', password: 'wrong-password' }, '192.0.2.1'));
    assert.deepEqual(tally(results), { invalid: BUDGET, throttled: GUESSES - BUDGET });
    assert.equal(s.checks(), BUDGET, 'password checks');
    // The right password is refused too while blocked, and costs no check.
    const blocked = await login(s, { username: 'alice', password: PASSWORD }, '192.0.2.1');
    assert.equal(blocked.statusCode, 429);
    assert.equal(s.checks(), BUDGET);
  });

  test('username and e-mail of one user share a budget; an unknown name answers exactly the same', async (t) => {
    const s = await countingSite(t, kind);
    await s.addUser('alice');
    // Known user: the logins alternate between the username, the e-mail and another case.
    const forms = ['alice', 'alice@example.test', 'ALICE@Example.Test', 'Alice'];
    const known = await concurrently(GUESSES, (i) => login(s, { username: forms[i % forms.length], password: 'wrong-password' }, '198.51.100.1'));
    const unknown = await concurrently(GUESSES, () => login(s, { username: 'ghost', password: 'wrong-password' }, '198.51.100.2'));
    assert.deepEqual(tally(known), { invalid: BUDGET, throttled: GUESSES - BUDGET });
    assert.deepEqual(tally(unknown), { invalid: BUDGET, throttled: GUESSES - BUDGET });
    assert.equal(s.checks(), 2 * BUDGET);
    // Sequentially too: one more try by the e-mail, then by the username, are both refused, with the same headers.
    const byEmail = await login(s, { username: 'alice@example.test', password: PASSWORD }, '198.51.100.3');
    const byGhost = await login(s, { username: 'ghost', password: PASSWORD }, '198.51.100.4');
    for (const res of [byEmail, byGhost]) {
      assert.equal(res.statusCode, 429);
      assert.deepEqual(res.json(), THROTTLED);
    }
    assert.equal(byEmail.headers['retry-after'], byGhost.headers['retry-after']);
    assert.equal(s.checks(), 2 * BUDGET);
  });

  test('a success releases the reservation: the right password within the budget works and resets the count', async (t) => {
    const s = await countingSite(t, kind);
    await s.addUser('alice');
    const wrong = { username: 'alice', password: 'wrong-password' };
    const from = '192.0.2.3';
    for (let i = 0; i < BUDGET - 1; i++) assert.equal((await login(s, wrong, from)).statusCode, 400);
    assert.equal((await login(s, { username: 'alice@example.test', password: PASSWORD }, from)).statusCode, 200);
    // The count starts again: the whole budget is available, concurrently too.
    const results = await concurrently(GUESSES, () => login(s, wrong, from));
    assert.deepEqual(tally(results), { invalid: BUDGET, throttled: GUESSES - BUDGET });
    assert.equal(s.checks(), (BUDGET - 1) + 1 + BUDGET);
  });

  test('successful logins give the address reservation back: they never use up its budget', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '3' } });
    await s.addUser('alice');
    await s.addUser('bob');
    for (let i = 0; i < 6; i++) assert.equal((await login(s, { username: 'alice', password: PASSWORD }, '203.0.113.9')).statusCode, 200);
    // As many at once as the budget: all in, and the address is free again afterwards.
    const results = await concurrently(3, (i) => login(s, { username: i % 2 ? 'alice' : 'bob', password: PASSWORD }, '203.0.113.9'));
    assert.deepEqual(results.map((r) => r.statusCode), [200, 200, 200]);
    assert.equal((await login(s, { username: 'bob', password: PASSWORD }, '203.0.113.9')).statusCode, 200);
  });

  test(`${GUESSES} concurrent wrong authenticator codes with the right password: at most ${BUDGET} codes checked`, async (t) => {
    const s = await countingSite(t, kind);
    await s.addUser('alice');
    const ck = Number(s.customer.customerKey);
    const { secret } = (await s.admin.post('/auth/google-auth-secret', { customerKey: ck, username: 'alice', authenticatorType: GA })).json();
    const validated = await s.admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username: 'alice', authenticatorType: GA, secret, otpToken: totpAt(secret, s.clock.now()) });
    assert.equal(validated.statusCode, 200, validated.body);
    const codeChecks = t.mock.method(s.composition.services.mfa, 'checkLoginOtp');
    s.clock.advance(30_000);
    const right = Number(totpAt(secret, s.clock.now()));
    const results = await concurrently(GUESSES, (i) => login(s, {
      username: 'alice', password: PASSWORD, otp: String((right + 500_000 + i) % 1_000_000).padStart(6, '0'),
    }, '192.0.2.5'));
    assert.deepEqual(tally(results), { invalid: BUDGET, throttled: GUESSES - BUDGET });
    assert.equal(codeChecks.mock.callCount(), BUDGET, 'authenticator code checks');
  });
});
