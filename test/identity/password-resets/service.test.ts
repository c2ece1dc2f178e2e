/**
 * Forgotten passwords, the service: a request mails enabled users only (unknown and disabled users
 * write nothing), at most 10 an hour per user; the link lives 30 minutes, is never used by a look,
 * works once (one winner among concurrent uses) under the password rules, and ends every SSO session
 * of the user and the user's other links; it leaves the second factor as it was. Mails go through a
 * real SMTP server. Both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { SYSTEM } from '../../../src/audit/context.ts';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { Invalid, MfaFailed } from '../../../src/lib/errors.ts';
import { magicLinkPurgeJob } from '../../../src/identity/magic-links/purge.ts';
import { purgePasswordResets } from '../../../src/identity/password-resets/purge.ts';
import { build, type TestApp } from '../../helpers/app.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { NEW_PASSWORD, PASSWORD, mailedLinks, newUser, tokenOf } from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(() => sink.stop());

const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

const browser = { userAgent: 'Mozilla/5.0 (test)', address: '203.0.113.9' };

async function setup(t: Parameters<typeof build>[0], kind: Parameters<typeof build>[1]): Promise<TestApp> {
  return build(t, kind, { LATCHKEY_SMTP_URL: sink.url, LATCHKEY_PUBLIC_URL: 'http://id.example.test' });
}

async function rowsOf(env: TestApp) {
  const db = env.composition.store.db;
  const { customerId } = env.customer;
  const resets = await db.selectFrom('password_resets').select(['user_id', 'token_hash']).where('customer_id', '=', customerId).execute();
  const mails = await db.selectFrom('mail_outbox').select(['template', 'to_address']).where('customer_id', '=', customerId).execute();
  return { resets, mails };
}

describeEachStore('Password resets', (kind) => {
  test('a known, enabled user gets one mail by username or e-mail; an unknown or disabled one: nothing written', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, users } = env.composition.services;
    const customer = { id: env.customer.customerId, customerKey: env.customer.customerKey };
    const user = await newUser(env);

    assert.equal(await passwordResets.request(customer, 'nobody-here', SYSTEM), 'no-user');
    assert.equal(await passwordResets.request(customer, 'nobody@example.test', SYSTEM), 'no-user');
    assert.equal(await passwordResets.request(customer, '', SYSTEM), 'no-user');
    assert.deepEqual(await rowsOf(env), { resets: [], mails: [] }, 'an unknown user writes nothing');

    await users.setDisabled(customer.id, user.username, true, SYSTEM);
    assert.equal(await passwordResets.request(customer, user.username, SYSTEM), 'no-user');
    assert.deepEqual(await rowsOf(env), { resets: [], mails: [] }, 'a disabled user gets no mail');
    await users.setDisabled(customer.id, user.username, false, SYSTEM);

    assert.equal(await passwordResets.request(customer, user.username, SYSTEM), 'mailed');
    assert.equal(await passwordResets.request(customer, ` ${user.email.toUpperCase()} `, SYSTEM), 'mailed');
    const { resets, mails } = await rowsOf(env);
    assert.equal(resets.length, 2);
    assert.deepEqual(mails, [{ template: 'password-reset', to_address: user.email }, { template: 'password-reset', to_address: user.email }]);

    const links = await mailedLinks(env, sink, user.email, 2);
    for (const link of links) {
      assert.match(link, new RegExp(`^http://id\\.example\\.test/customers/${env.customer.customerKey}/reset/[A-Za-z0-9_-]{43}$`));
      assert.ok(!resets.some((r) => r.token_hash.includes(tokenOf(link))), 'only the hash is stored');
    }
  });

  test('capped like magic links: 10 mails an hour per user, then nothing until the hour has passed', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets } = env.composition.services;
    const customer = { id: env.customer.customerId, customerKey: env.customer.customerKey };
    const user = await newUser(env);
    const other = await newUser(env);

    const outcomes = await Promise.all(Array.from({ length: 12 }, () => passwordResets.request(customer, user.username, SYSTEM)));
    assert.equal(outcomes.filter((o) => o === 'mailed').length, 10);
    assert.equal(outcomes.filter((o) => o === 'capped').length, 2);
    assert.equal((await rowsOf(env)).mails.length, 10);
    assert.equal(await passwordResets.request(customer, other.username, SYSTEM), 'mailed', 'the cap is per user');

    env.clock.advance(59 * 60_000);
    assert.equal(await passwordResets.request(customer, user.username, SYSTEM), 'capped');
    env.clock.advance(2 * 60_000);
    assert.equal(await passwordResets.request(customer, user.username, SYSTEM), 'mailed');
  });

  test('a look never uses the link; it works once, within 30 minutes, under the password rules, and ends every session', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, users, ssoSessions } = env.composition.services;
    const customerId = env.customer.customerId;
    const customer = { id: customerId, customerKey: env.customer.customerKey };
    const user = await newUser(env);
    const sessionA = await ssoSessions.open(customerId, user.id, ['pwd'], browser);
    const sessionB = await ssoSessions.open(customerId, user.id, ['pwd', 'otp'], browser);

    await passwordResets.request(customer, user.username, SYSTEM);
    await passwordResets.request(customer, user.username, SYSTEM);
    const [older, newer] = (await mailedLinks(env, sink, user.email, 2)).map(tokenOf) as [string, string];

    assert.ok(await passwordResets.inspect(customerId, newer));
    assert.ok(await passwordResets.inspect(customerId, newer), 'looking twice changes nothing');
    const stranger = await env.newCustomer();
    assert.equal(await passwordResets.inspect(stranger.customer.customerId, newer), undefined, 'another customer\'s issuer');
    assert.deepEqual(await passwordResets.complete(stranger.customer.customerId, newer, NEW_PASSWORD, SYSTEM), { ok: false, reason: 'dead' });

    await assert.rejects(passwordResets.complete(customerId, newer, 'short', SYSTEM), (error: unknown) => error instanceof Invalid && error.field === 'password');
    await assert.rejects(passwordResets.complete(customerId, newer, 'password123', SYSTEM), Invalid, 'a common password');
    assert.ok(await passwordResets.inspect(customerId, newer), 'a refused password leaves the link usable');
    assert.ok(await ssoSessions.current(customerId, sessionA.value), 'and the sessions open');

    assert.deepEqual(await passwordResets.complete(customerId, newer, NEW_PASSWORD, SYSTEM), { ok: true, userId: user.id });
    assert.ok(await users.verifyCredentials(customerId, user.username, NEW_PASSWORD), 'the new password signs in');
    assert.equal(await users.verifyCredentials(customerId, user.username, PASSWORD), undefined, 'the old one does not');
    assert.equal(await ssoSessions.current(customerId, sessionA.value), undefined);
    assert.equal(await ssoSessions.current(customerId, sessionB.value), undefined);
    assert.deepEqual(await ssoSessions.listForUser(customerId, user.id), []);
    assert.equal((await users.findById(customerId, user.id))?.passwordChangeRequired, false);

    assert.equal(await passwordResets.inspect(customerId, newer), undefined, 'used');
    assert.deepEqual(await passwordResets.complete(customerId, newer, 'yet another passphrase', SYSTEM), { ok: false, reason: 'dead' });
    assert.equal(await passwordResets.inspect(customerId, older), undefined, 'a new password ends the older links too');
    assert.equal(await passwordResets.inspect(customerId, 'not-a-token'), undefined);
    assert.equal(await passwordResets.inspect(customerId, 'x'.repeat(43)), undefined);
  });

  test('expiry: usable for 30 minutes, not a moment longer; disabling the user ends the link', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, users } = env.composition.services;
    const customerId = env.customer.customerId;
    const customer = { id: customerId, customerKey: env.customer.customerKey };
    const user = await newUser(env);

    await passwordResets.request(customer, user.username, SYSTEM);
    const [token] = (await mailedLinks(env, sink, user.email)).map(tokenOf) as [string];
    env.clock.advance(30 * 60_000 - 1);
    assert.ok(await passwordResets.inspect(customerId, token));
    env.clock.advance(1);
    assert.equal(await passwordResets.inspect(customerId, token), undefined);
    assert.deepEqual(await passwordResets.complete(customerId, token, NEW_PASSWORD, SYSTEM), { ok: false, reason: 'dead' });
    assert.ok(await users.verifyCredentials(customerId, user.username, PASSWORD), 'the password is unchanged');

    await passwordResets.request(customer, user.username, SYSTEM);
    const [second] = (await mailedLinks(env, sink, user.email, 2)).slice(1).map(tokenOf) as [string];
    await users.setDisabled(customerId, user.username, true, SYSTEM);
    assert.equal(await passwordResets.inspect(customerId, second), undefined);
    assert.deepEqual(await passwordResets.complete(customerId, second, NEW_PASSWORD, SYSTEM), { ok: false, reason: 'dead' });
  });

  test('a reset sets the password only: an enrolled authenticator and the recovery codes stay, and are still asked', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, mfa, recoveryCodes } = env.composition.services;
    const customerId = env.customer.customerId;
    const user = await newUser(env);
    const { secret } = await mfa.register(customerId, { login: user.username, customerDisplayName: 'Acme' });
    await mfa.validate(customerId, { login: user.username, secret, otp: totpAt(secret, env.clock.now()) }, SYSTEM);
    const codes = await recoveryCodes.generate(customerId, user.id);

    await passwordResets.request({ id: customerId, customerKey: env.customer.customerKey }, user.username, SYSTEM);
    const [token] = (await mailedLinks(env, sink, user.email)).map(tokenOf) as [string];
    assert.deepEqual(await passwordResets.complete(customerId, token, NEW_PASSWORD, SYSTEM), { ok: true, userId: user.id });

    assert.equal(await mfa.hasActiveAuthenticator(customerId, user.id), true);
    await assert.rejects(mfa.checkLoginOtp(customerId, user.id, undefined), (error: unknown) => error instanceof MfaFailed && error.reason === 'otp_required');
    assert.equal(await recoveryCodes.remaining(customerId, user.id), 10);
    assert.equal(await recoveryCodes.use(customerId, user.id, codes[0]!), true);
  });

  test('concurrent uses of one link: exactly one sets its password', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, users } = env.composition.services;
    const customerId = env.customer.customerId;
    const user = await newUser(env);
    await passwordResets.request({ id: customerId, customerKey: env.customer.customerKey }, user.username, SYSTEM);
    const [token] = (await mailedLinks(env, sink, user.email)).map(tokenOf) as [string];

    const candidates = ['first long passphrase', 'second long passphrase', 'third long passphrase', 'fourth long passphrase'];
    const outcomes = await Promise.all(candidates.map((password) => passwordResets.complete(customerId, token, password, SYSTEM)));
    assert.equal(outcomes.filter((o) => o.ok).length, 1);
    const winner = candidates[outcomes.findIndex((o) => o.ok)]!;
    for (const password of candidates) {
      assert.equal(Boolean(await users.verifyCredentials(customerId, user.username, password)), password === winner);
    }
  });

  test('the purge deletes resets long expired, and the rows go with their user', async (t) => {
    const env = await setup(t, kind);
    const { passwordResets, users } = env.composition.services;
    const customer = { id: env.customer.customerId, customerKey: env.customer.customerKey };
    const keep = await newUser(env);
    const gone = await newUser(env);
    await passwordResets.request(customer, keep.username, SYSTEM);
    await passwordResets.request(customer, gone.username, SYSTEM);
    await users.remove(customer.id, gone.username, SYSTEM);
    assert.deepEqual((await rowsOf(env)).resets.map((r) => Number(r.user_id)), [keep.id]);

    const db = env.composition.store.db;
    const now = env.clock.now();
    await purgePasswordResets(db, now);
    assert.equal((await rowsOf(env)).resets.length, 1, 'a live reset stays');

    // The cluster's purge job keeps an expired reset a week, like a used magic link, then deletes it.
    const job = magicLinkPurgeJob({ db, clock: env.clock });
    env.clock.advance(30 * 60_000 + 6 * 86_400_000);
    assert.equal(await job.tick(), true);
    assert.equal((await rowsOf(env)).resets.length, 1, 'expired for less than a week');
    env.clock.advance(86_400_000 + 1);
    assert.equal(await job.tick(), true);
    assert.equal((await rowsOf(env)).resets.length, 0);
  });
});

describe('Password resets [sqlite, counts in Redis]', { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
  test('the cap is counted in Redis (shared by every node) under the reset\'s own key', async (t) => {
    const env = await build(t, 'sqlite', { LATCHKEY_SMTP_URL: sink.url, LATCHKEY_REDIS_URL: redisUrl! });
    const { passwordResets } = env.composition.services;
    const customer = { id: env.customer.customerId, customerKey: env.customer.customerKey };
    const user = await newUser(env);
    // Ids repeat between in-memory databases: the key starts empty.
    const key = `latchkey:throttle:password-reset:${customer.id}:${user.id}`;
    const redis = new Redis(redisUrl!);
    t.after(() => redis.quit());
    await redis.del(key);

    const outcomes = await Promise.all(Array.from({ length: 13 }, () => passwordResets.request(customer, user.username, SYSTEM)));
    assert.equal(outcomes.filter((o) => o === 'mailed').length, 10);
    assert.equal((await rowsOf(env)).mails.length, 10);
    assert.equal(await redis.hget(key, 'c'), '10');
    assert.deepEqual(await env.composition.store.db.selectFrom('site_login_failures').select('key').execute(), [], 'nothing counted in the database');
  });
});
