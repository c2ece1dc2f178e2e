/**
 * POST /cms-json/api/v1/token: the three body formats, the spec's two errors, disabled users, the
 * authenticator code for users with MFA (registered through the admin API), and failed-login
 * throttling per username and per client address, moved by the test clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, buildSite, PASSWORD, POSTS_PATH, siteError, TOKEN_PATH, type SiteTest } from './helpers.ts';

if (postgresUrl) await postgresStore();

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const INVALID = siteError(400, 'INVALID_CREDENTIALS', 'Invalid username or password.');
const bad = (description: string) => siteError(400, 'BAD_REQUEST', description);
const GA = 'GOOGLE AUTHENTICATOR';

function login(s: SiteTest, body: Record<string, unknown>, remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> {
  return s.inject({ method: 'POST', url: TOKEN_PATH, payload: body, remoteAddress });
}

/** Asserts the issued-JWT body whole (the token by shape), and its no-store headers. */
function assertIssued(s: SiteTest, res: LightMyRequestResponse, ttl = 3600): string {
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers.pragma, 'no-cache');
  const body = res.json();
  assert.match(body.jwt_token, JWT_SHAPE);
  const iat = Math.floor(s.clock.now() / 1000);
  assert.deepEqual(body, { token_type: 'Bearer', iat, expires_in: iat + ttl, jwt_token: body.jwt_token });
  return body.jwt_token;
}

function assertRefused(res: LightMyRequestResponse, status: number, body: unknown): void {
  assertJson(res, status, body);
  assert.equal(res.headers['cache-control'], 'no-store');
}

function multipart(fields: Record<string, string>, boundary = 'latchkey-boundary'): { payload: string; headers: Record<string, string> } {
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  return { payload: `${parts.join('')}--${boundary}--\r\n`, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describeEachStore('site token endpoint', (kind) => {
  test('JSON, form-urlencoded and multipart bodies each get a token that opens the posts', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const json = assertIssued(s, await login(s, { username: 'alice', password: PASSWORD }));
    const form = assertIssued(s, await s.inject({
      method: 'POST', url: TOKEN_PATH,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ username: 'alice', password: PASSWORD }).toString(),
    }));
    const multi = assertIssued(s, await s.inject({ method: 'POST', url: TOKEN_PATH, ...multipart({ username: 'alice', password: PASSWORD }) }));
    for (const token of [json, form, multi]) {
      assert.equal((await s.get(POSTS_PATH, { authorization: `Bearer ${token}` })).statusCode, 200);
    }
    assert.notEqual(json, form, 'every token has its own jti');
  });

  test('the username may be given in any case, or as the e-mail; the lifetime is configurable', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_JWT_TTL_SECONDS: '120' } });
    await s.addUser('alice');
    assertIssued(s, await login(s, { username: 'ALICE', password: PASSWORD }), 120);
    assertIssued(s, await login(s, { username: 'Alice@Example.test', password: PASSWORD }), 120);
  });

  test('wrong password, unknown user, user without a password and disabled user: the same 400 INVALID_CREDENTIALS', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    await s.addUser('dave');
    await s.composition.services.users.create(s.customerId, { username: 'nopass', email: 'nopass@example.test', firstName: 'N', lastName: 'P', customAttributes: {} }, SYSTEM);
    assertRefused(await login(s, { username: 'alice', password: 'not-the-password' }), 400, INVALID);
    assertRefused(await login(s, { username: 'nobody', password: PASSWORD }), 400, INVALID);
    assertRefused(await login(s, { username: 'nopass', password: PASSWORD }), 400, INVALID);
    assert.equal((await s.admin.post('/admin/users/disable', { customerKey: Number(s.customer.customerKey), username: 'dave' })).statusCode, 200);
    assertRefused(await login(s, { username: 'dave', password: PASSWORD }), 400, INVALID);
    assert.equal((await s.admin.post('/admin/users/enable', { customerKey: Number(s.customer.customerKey), username: 'dave' })).statusCode, 200);
    assertIssued(s, await login(s, { username: 'dave', password: PASSWORD }));
  });

  test("another customer's user cannot get a token from this site", async (t) => {
    const s = await buildSite(t, kind);
    const other = await s.newCustomer();
    await s.composition.services.users.create(other.customer.customerId, { username: 'carol', email: 'carol@example.test', firstName: 'C', lastName: 'D', password: PASSWORD, customAttributes: {} }, SYSTEM);
    assertRefused(await login(s, { username: 'carol', password: PASSWORD }), 400, INVALID);
  });

  test('a missing or malformed parameter: 400 BAD_REQUEST naming it', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const cases: [unknown, string][] = [
      [{ password: PASSWORD }, 'username is required'],
      [{ username: 'alice' }, 'password is required'],
      [{ username: '', password: PASSWORD }, 'username is required'],
      [{ username: 'alice', password: '' }, 'password is required'],
      [{ username: 42, password: PASSWORD }, 'username must be a string'],
      [{ username: 'alice', password: ['a'] }, 'password must be given once'],
      [{ username: 'a'.repeat(257), password: PASSWORD }, 'username is too long'],
      [{ username: 'alice', password: 'p'.repeat(1025) }, 'password is too long'],
      [{ username: 'ali\u0000ce', password: PASSWORD }, 'username must not contain control characters'],
      [{ username: 'alice', password: PASSWORD, otp: 123456 }, 'otp must be a string'],
      [[], 'body must be a form or a JSON object'],
      ['"alice"', 'body must be a form or a JSON object'],
    ];
    for (const [body, description] of cases) {
      const res = await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'application/json' }, payload: typeof body === 'string' ? body : JSON.stringify(body) });
      assertRefused(res, 400, bad(description));
    }
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH }), 400, bad('username is required'));
    assertRefused(await s.inject({
      method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `username=alice&username=bob&password=${PASSWORD}`,
    }), 400, bad('username must be given once'));
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'application/json' }, payload: '{"username":' }), 400, bad('request is malformed'));
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'text/xml' }, payload: '<a/>' }), 415,
      siteError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Content-Type is not supported'));
  });

  test('multipart: fields only, small and few; a file part or too many parts is refused with 413', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const boundary = 'b0undary';
    const file = `--${boundary}\r\nContent-Disposition: form-data; name="username"; filename="u.txt"\r\nContent-Type: text/plain\r\n\r\nalice\r\n--${boundary}--\r\n`;
    const tooLarge = siteError(413, 'PAYLOAD_TOO_LARGE', 'multipart body has too many or too large parts (fields only)');
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload: file }), 413, tooLarge);
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, 'x']));
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH, ...multipart({ username: 'alice', password: PASSWORD, ...many }) }), 413, tooLarge);
    assertRefused(await s.inject({ method: 'POST', url: TOKEN_PATH, ...multipart({ username: 'alice', password: 'p'.repeat(3000) }) }), 400, bad('password is too long'));
  });

  test('a user with an authenticator app needs a current, unused code', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    await s.addUser('bob');
    const ck = Number(s.customer.customerKey);
    const registered = await s.admin.post('/auth/google-auth-secret', { customerKey: ck, username: 'alice', authenticatorType: GA });
    assert.equal(registered.statusCode, 200, registered.body);
    const { secret } = registered.json();
    const validated = await s.admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username: 'alice', authenticatorType: GA, secret, otpToken: totpAt(secret, s.clock.now()) });
    assert.equal(validated.statusCode, 200, validated.body);

    assertRefused(await login(s, { username: 'alice', password: PASSWORD }), 400, bad('otp is required for this user'));
    assertRefused(await login(s, { username: 'alice', password: 'wrong-password', otp: totpAt(secret, s.clock.now() + 30_000) }), 400, INVALID);
    const wrong = totpAt(secret, s.clock.now() + 10 * 30_000);
    assertRefused(await login(s, { username: 'alice', password: PASSWORD, otp: wrong }), 400, INVALID);
    s.clock.advance(30_000);
    const code = totpAt(secret, s.clock.now());
    assertIssued(s, await login(s, { username: 'alice', password: PASSWORD, otp: code }));
    assertRefused(await login(s, { username: 'alice', password: PASSWORD, otp: code }), 400, INVALID);
    s.clock.advance(30_000);
    assertIssued(s, await s.inject({ method: 'POST', url: TOKEN_PATH, ...multipart({ username: 'alice', password: PASSWORD, otp: totpAt(secret, s.clock.now()) }) }));
    assertIssued(s, await login(s, { username: 'bob', password: PASSWORD, otp: '000000' }), 3600);
  });
});

describeEachStore('site token endpoint throttling', (kind) => {
  test('per username: the budget of attempts, then a doubling delay with Retry-After; a success clears it', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const wrong = { username: 'alice', password: 'wrong-password' };
    // The 5th failure (the budget) blocks for 1 s.
    for (let i = 0; i < 5; i++) assertRefused(await login(s, wrong), 400, INVALID);
    const throttled = (seconds: number) => {
      const body = siteError(429, 'TOO_MANY_REQUESTS', 'Too many failed logins: try again later.');
      return (res: LightMyRequestResponse) => {
        assertRefused(res, 429, body);
        assert.equal(res.headers['retry-after'], String(seconds));
      };
    };
    throttled(1)(await login(s, wrong));
    throttled(1)(await login(s, { username: 'alice', password: PASSWORD }));
    throttled(1)(await login(s, { username: 'ALICE', password: PASSWORD }));
    s.clock.advance(1000);
    assertRefused(await login(s, wrong), 400, INVALID);
    throttled(2)(await login(s, wrong));
    s.clock.advance(2000);
    assertIssued(s, await login(s, { username: 'alice', password: PASSWORD }));
    for (let i = 0; i < 5; i++) assertRefused(await login(s, wrong), 400, INVALID);
  });

  test('unknown usernames are throttled alike, and the delay is capped', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '2', LATCHKEY_SITE_LOGIN_MAX_DELAY_SECONDS: '4' } });
    const ghost = { username: 'ghost', password: 'whatever-it-is' };
    const seen: string[] = [];
    assertRefused(await login(s, ghost), 400, INVALID);
    for (let i = 0; i < 8; i++) {
      assertRefused(await login(s, ghost), 400, INVALID);
      const res = await login(s, ghost);
      assert.equal(res.statusCode, 429);
      seen.push(String(res.headers['retry-after']));
      s.clock.advance(Number(res.headers['retry-after']) * 1000);
    }
    assert.deepEqual(seen, ['1', '2', '4', '4', '4', '4', '4', '4']);
  });

  test('failures are forgotten after 15 minutes without one', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '2' } });
    await s.addUser('alice');
    const wrong = { username: 'alice', password: 'wrong-password' };
    for (let i = 0; i < 2; i++) assertRefused(await login(s, wrong), 400, INVALID);
    s.clock.advance(15 * 60_000 + 1);
    // Counted again from 1: two more checks before the block (a third failure would block for 2 s).
    for (let i = 0; i < 2; i++) assertRefused(await login(s, wrong), 400, INVALID);
    const blocked = await login(s, wrong);
    assert.equal(blocked.statusCode, 429);
    assert.equal(blocked.headers['retry-after'], '1');
  });

  test('per client address: spraying usernames from one address is throttled, other addresses are not', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '3' } });
    await s.addUser('alice');
    for (let i = 0; i < 3; i++) assertRefused(await login(s, { username: `user${i}`, password: 'x-password' }, '203.0.113.7'), 400, INVALID);
    const blocked = await login(s, { username: 'alice', password: PASSWORD }, '203.0.113.7');
    assert.equal(blocked.statusCode, 429);
    assert.equal(blocked.headers['retry-after'], '1');
    assertIssued(s, await login(s, { username: 'alice', password: PASSWORD }, '198.51.100.2'));
  });

  test('concurrent failures: the budget is checked, the rest refused; the block holds on every node', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const results = await Promise.all(Array.from({ length: 8 }, () => login(s, { username: 'alice', password: 'wrong-password' })));
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [...Array(5).fill(400), ...Array(3).fill(429)]);
    const otherNode = await s.composition.buildSiteApp({ customerKey: s.customer.customerKey });
    t.after(() => otherNode.close());
    const res = await otherNode.inject({ method: 'POST', url: TOKEN_PATH, payload: { username: 'alice', password: PASSWORD } });
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '1', 'the 5th failure blocks for 1 s');
  });
});
