/**
 * End users' SSO sessions (the store behind the hosted sign-in): a session lives within its idle and
 * absolute limits, a step-up keeps its factors and its end, a new value every time, and disabling or
 * deleting the user, a new password and endAllForUser end it. Both stores.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const browser = { userAgent: 'Mozilla/5.0 (test)', address: '203.0.113.7' };
const PASSWORD = 'correct horse battery staple';

async function newUser(env: TestApp) {
  const username = `s${randomBytes(4).toString('hex')}`;
  const { customerId } = env.customer;
  await env.composition.services.users.create(customerId, {
    username, email: `${username}@example.test`, firstName: 'Sam', lastName: 'Session', password: PASSWORD, customAttributes: {},
  }, SYSTEM);
  return (await env.composition.services.users.findByLogin(customerId, username))!;
}

describeEachStore('SSO sessions', (kind) => {
  test('open, current, step-up with a new value, sign-out, idle and absolute limits', async (t) => {
    const env = await build(t, kind);
    const sessions = env.composition.services.ssoSessions;
    const { customerId } = env.customer;
    const user = await newUser(env);

    const first = await sessions.open(customerId, user.id, ['pwd'], browser);
    assert.deepEqual((await sessions.current(customerId, first.value))?.session.amr, ['pwd']);
    assert.equal(await sessions.current(customerId, 'x'.repeat(43)), undefined, 'an unknown value is no session');
    assert.equal(await sessions.current(customerId + 1, first.value), undefined, 'another customer never sees it');

    const stepped = await sessions.open(customerId, user.id, ['otp'], browser, first.value);
    assert.notEqual(stepped.value, first.value);
    assert.equal(await sessions.current(customerId, first.value), undefined, 'the old value ended with the step-up');
    const now = await sessions.current(customerId, stepped.value);
    assert.deepEqual(now?.session.amr, ['pwd', 'otp']);
    assert.equal(now?.session.expiresAt, first.session.expiresAt, 'a step-up does not extend the absolute end');
    assert.match(sessions.cookie('/customers/1', stepped.value, stepped.session), /^lk_sso=[A-Za-z0-9_-]{43}; Path=\/customers\/1\/; Max-Age=36000; HttpOnly; SameSite=Lax$/);

    await sessions.end(customerId, stepped.value);
    assert.equal(await sessions.current(customerId, stepped.value), undefined);

    // Idle: 29 minutes between requests keep it, 30 end it.
    const idle = await sessions.open(customerId, user.id, ['pwd'], browser);
    env.clock.advance(29 * 60_000);
    assert.ok(await sessions.current(customerId, idle.value));
    env.clock.advance(29 * 60_000);
    assert.ok(await sessions.current(customerId, idle.value), 'each use resets the idle time');
    env.clock.advance(30 * 60_000);
    assert.equal(await sessions.current(customerId, idle.value), undefined);

    // Absolute: used every 20 minutes, it still ends 10 hours after sign-in.
    const long = await sessions.open(customerId, user.id, ['pwd'], browser);
    for (let minutes = 20; minutes < 600; minutes += 20) {
      env.clock.advance(20 * 60_000);
      assert.ok(await sessions.current(customerId, long.value), `alive after ${minutes} minutes`);
    }
    env.clock.advance(20 * 60_000);
    assert.equal(await sessions.current(customerId, long.value), undefined);
  });

  test("disable, a new password, delete and endAllForUser end the user's sessions; the list shows the live ones", async (t) => {
    const env = await build(t, kind, { LATCHKEY_READ_CACHE: 'false' });
    const { users, ssoSessions: sessions } = env.composition.services;
    const { customerId } = env.customer;
    const user = await newUser(env);

    const a = await sessions.open(customerId, user.id, ['pwd'], browser);
    await users.setDisabled(customerId, user.username, true, SYSTEM);
    assert.equal(await sessions.current(customerId, a.value), undefined, 'disabled');
    await users.setDisabled(customerId, user.username, false, SYSTEM);

    const b = await sessions.open(customerId, user.id, ['pwd'], browser);
    await users.setPassword(customerId, user.id, 'another long passphrase', { requireChange: false }, SYSTEM);
    assert.equal(await sessions.current(customerId, b.value), undefined, 'a new password');

    const c = await sessions.open(customerId, user.id, ['pwd'], { userAgent: 'x'.repeat(500), address: '198.51.100.1' });
    const d = await sessions.open(customerId, user.id, ['email'], browser);
    const listed = await sessions.listForUser(customerId, user.id);
    assert.deepEqual(listed.map((s) => s.id).sort(), [c.session.id, d.session.id].sort());
    assert.equal(listed.find((s) => s.id === c.session.id)?.userAgent.length, 200);
    assert.equal(await sessions.endOne(customerId, user, c.session.id, SYSTEM), true);
    assert.equal(await sessions.endOne(customerId, user, c.session.id, SYSTEM), false);
    await sessions.endAllForUser(customerId, user, SYSTEM);
    assert.equal(await sessions.current(customerId, d.value), undefined);

    const e = await sessions.open(customerId, user.id, ['pwd'], browser);
    await users.remove(customerId, user.username, SYSTEM);
    assert.equal(await sessions.current(customerId, e.value), undefined, 'deleted');
  });
});
