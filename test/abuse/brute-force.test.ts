/**
 * Brute force against the three places that check a guessable secret: the content site's token
 * endpoint (password, and password + authenticator code), the authenticator registration check, and
 * the magic-link landing's code form. Each is throttled per user and per client address, never
 * checks more than its budget, answers an unknown user exactly like a known one, and lets go on its
 * own: an attacker cannot lock a user out for longer than the capped delay (the test clock moves).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { PASSWORD, RETURN_URL, setup, type AbuseEnv } from './helpers.ts';

const TOKEN_PATH = '/cms-json/api/v1/token';
const MAX_DELAY_SECONDS = 60;
const SITE_ENV = { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '5', LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '8', LATCHKEY_SITE_LOGIN_MAX_DELAY_SECONDS: String(MAX_DELAY_SECONDS) };
const INVALID = { status: 'error', error: 'INVALID_CREDENTIALS', code: '400', error_description: 'Invalid username or password.' };
const THROTTLED = { status: 'error', error: 'TOO_MANY_REQUESTS', code: '429', error_description: 'Too many failed logins: try again later.' };
const GA = 'GOOGLE AUTHENTICATOR';

const login = (site: FastifyInstance, body: Record<string, unknown>, remoteAddress: string) =>
  site.inject({ method: 'POST', url: TOKEN_PATH, payload: body, remoteAddress });

/** What an observer can compare between two answers: status, body and the throttle's header. */
const observable = (res: LightMyRequestResponse) => ({ status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] });

/** A user with an active authenticator (registered and validated through the admin API): its secret. */
async function withAuthenticator(env: AbuseEnv, username: string): Promise<string> {
  const ck = Number(env.customer.customerKey);
  const { secret } = (await env.admin.post('/auth/google-auth-secret', { customerKey: ck, username, authenticatorType: GA })).json();
  const ok = await env.admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username, authenticatorType: GA, secret, otpToken: totpAt(secret, env.clock.now()) });
  assert.equal(ok.statusCode, 200, ok.body);
  return secret;
}

const wrongCode = (secret: string, now: number) => String((Number(totpAt(secret, now)) + 500_000) % 1_000_000).padStart(6, '0');

describeEachStore('abuse: brute force', (kind) => {
  test('token endpoint: guesses spread over addresses are throttled per user; the block expires; unknown users answer the same', async (t) => {
    const env = await setup(t, kind, SITE_ENV);
    const site = await env.site();
    await env.addUser('victim');
    const known: LightMyRequestResponse[] = [];
    const unknown: LightMyRequestResponse[] = [];
    // Each guess from a new address: the address budget never matters, only the user's.
    for (let i = 0; i < 8; i++) {
      known.push(await login(site, { username: 'victim', password: `guess-${i}` }, `192.0.2.${i + 1}`));
      unknown.push(await login(site, { username: 'nobody-here', password: `guess-${i}` }, `198.51.100.${i + 1}`));
    }
    assert.deepEqual(known.map((r) => r.statusCode), [400, 400, 400, 400, 400, 429, 429, 429]);
    for (const res of known) assert.deepEqual(res.json(), res.statusCode === 400 ? INVALID : THROTTLED);
    assert.deepEqual(known.map(observable), unknown.map(observable), 'an unknown user is answered exactly like a known one');
    // Even the right password is refused while blocked…
    assert.equal((await login(site, { username: 'victim', password: PASSWORD }, '203.0.113.1')).statusCode, 429);
    // …but the block is capped: no lockout lasts longer than the maximum delay.
    env.clock.advance(MAX_DELAY_SECONDS * 1000 + 1);
    const back = await login(site, { username: 'victim', password: PASSWORD }, '203.0.113.1');
    assert.equal(back.statusCode, 200, back.body);
  });

  test('token endpoint: one address spraying many usernames is throttled per address; the block expires', async (t) => {
    const env = await setup(t, kind, SITE_ENV);
    const site = await env.site();
    await env.addUser('bystander');
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await login(site, { username: `spray-${i}`, password: 'guess' }, '192.0.2.77')).statusCode);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 400, 400, 400, 429, 429]);
    // The sprayed address is blocked even for a real user's right password; other addresses are not.
    assert.equal((await login(site, { username: 'bystander', password: PASSWORD }, '192.0.2.77')).statusCode, 429);
    assert.equal((await login(site, { username: 'bystander', password: PASSWORD }, '192.0.2.78')).statusCode, 200);
    env.clock.advance(MAX_DELAY_SECONDS * 1000 + 1);
    assert.equal((await login(site, { username: 'bystander', password: PASSWORD }, '192.0.2.77')).statusCode, 200);
  });

  test('token endpoint: the right password with wrong authenticator codes spends the same per-user budget', async (t) => {
    const env = await setup(t, kind, SITE_ENV);
    const site = await env.site();
    await env.addUser('second');
    const secret = await withAuthenticator(env, 'second');
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await login(site, { username: 'second', password: PASSWORD, otp: wrongCode(secret, env.clock.now()) }, `192.0.2.${i + 10}`)).statusCode);
    }
    assert.deepEqual(statuses.slice(5), [429, 429]);
    assert.ok(statuses.slice(0, 5).every((s) => s === 400 || s === 401), statuses.join(','));
    env.clock.advance(MAX_DELAY_SECONDS * 1000 + 31_000);
    const ok = await login(site, { username: 'second', password: PASSWORD, otp: totpAt(secret, env.clock.now()) }, '192.0.2.99');
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('authenticator registration: 5 wrong codes lock the registration (not the user); a new registration starts over; unknown users are a 404 like any other route', async (t) => {
    const env = await setup(t, kind);
    await env.addUser('enrolling');
    const ck = Number(env.customer.customerKey);
    const start = async () => (await env.admin.post('/auth/google-auth-secret', { customerKey: ck, username: 'enrolling', authenticatorType: GA })).json().secret as string;
    const validate = (secret: string, otpToken: string, username = 'enrolling') =>
      env.admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username, authenticatorType: GA, secret, otpToken });
    const secret = await start();
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push((await validate(secret, wrongCode(secret, env.clock.now()))).json().message);
    assert.match(answers[4], /locked/);
    assert.match(answers[6], /^This registration is locked/);
    // Even the right code is refused for this registration…
    assert.equal((await validate(secret, totpAt(secret, env.clock.now()))).statusCode, 400);
    // …but the lock is the registration's, not the user's: a new one is checked again.
    const fresh = await start();
    const ok = await validate(fresh, totpAt(fresh, env.clock.now()));
    assert.equal(ok.statusCode, 200, ok.body);
    const ghost = await validate(secret, '123456', 'ghost-user');
    assert.equal(ghost.statusCode, 404);
    assert.deepEqual(ghost.json(), { status: 'FAILED', message: 'Invalid username or email.' });
  });

  test('landing code form: 5 codes per sign-in then it ends; forged or missing cookies are never checked; the per-address rate limit holds', async (t) => {
    const env = await setup(t, kind, { LATCHKEY_RATE_LIMIT_LANDING: '12/60' });
    const user = await env.addUser('landing');
    const secret = await withAuthenticator(env, 'landing');
    const app = await env.magicApp('AUTHENTICATOR_APP');
    const checks = t.mock.method(env.composition.services.mfa, 'checkLoginOtp');
    assert.equal((await env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: app, redirectUri: RETURN_URL })).statusCode, 200);
    // The token only ever leaves in the mail: read it back the way the bench does, from a known hash.
    const token = await tokenOfLatestLink(env);
    const from = '192.0.2.50';
    const consumed = await env.identity.inject({ method: 'POST', url: `/magic/${token}`, remoteAddress: from, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    assert.equal(consumed.statusCode, 200, consumed.body);
    const cookie = String(consumed.headers['set-cookie']).split(';')[0];
    const code = (value: string, headers: Record<string, string> = { cookie }, remoteAddress = from) => env.identity.inject({
      method: 'POST', url: '/magic/code', remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: `code=${value}`,
    });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await code(wrongCode(secret, env.clock.now()))).statusCode);
    assert.deepEqual(statuses, [400, 400, 400, 400, 410, 410]);
    // A forged pending-login id, or none, ends at once and costs no code check.
    const before = checks.mock.callCount();
    assert.equal((await code('000000', { cookie: `lk_magic_login=${'A'.repeat(43)}` })).statusCode, 410);
    assert.equal((await code('000000', {})).statusCode, 410);
    assert.equal(checks.mock.callCount(), before);
    assert.equal(before, 5, 'five codes were checked in all');
    // The landing's per-address budget (12 per minute here): this address has used 9 requests.
    const more = [await code('000000', {}), await code('000000', {}), await code('000000', {}), await code('000000', {})];
    assert.deepEqual(more.map((r) => r.statusCode), [410, 410, 410, 429]);
    assert.ok(Number(more[3].headers['retry-after']) >= 1);
    assert.equal((await code('000000', {}, '192.0.2.51')).statusCode, 410, 'another address is not affected');
  });
});

/** Replaces the newest link's stored hash with one of a token the test knows (only the hash is ever stored). */
async function tokenOfLatestLink(env: AbuseEnv): Promise<string> {
  const { randomBytes, createHash } = await import('node:crypto');
  const token = randomBytes(32).toString('base64url');
  const db = env.composition.store.db;
  const row = await db.selectFrom('magic_links').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow();
  await db.updateTable('magic_links').set({ token_hash: createHash('sha256').update(token).digest('hex') }).where('id', '=', row.id).execute();
  return token;
}
