/**
 * Events outside the admin API, on both stores: the hosted sign-in's outcomes (succeeded, a wrong
 * password, a wrong second factor, throttled), a magic link used, a password reset asked for and
 * done, an import (one event per changed user, then import.completed), the CLI (its actor), and the
 * all-or-nothing of a change and its event: a recorder that fails rolls the change back, a change
 * that fails leaves no event.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import type { AuditEvent } from '../../src/audit/types.ts';
import { parseArgs } from '../../src/cli/args.ts';
import { customerRotateKey } from '../../src/cli/commands/customer.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import type { ImportRecord } from '../../src/identity/users/import-rows.ts';
import { Browser } from '../helpers/relying-party.ts';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore } from '../helpers/stores.ts';
import type { TestApp } from '../helpers/app.ts';
import { createApplication, createUser, deploy, enrolAuthenticator, PASSWORD, type Deployment, type TestUser } from '../identity/sign-in/helpers.ts';
import { resetLinkPattern } from '../identity/password-resets/helpers.ts';
import { readAllPages } from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await sink?.stop(); });

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const post = (browser: Browser, url: string, fields: Record<string, string>) =>
  browser.fetch(url, { method: 'POST', headers: FORM, body: new URLSearchParams(fields).toString() });

async function allEvents(env: TestApp): Promise<AuditEvent[]> {
  return (await readAllPages(env.admin, env.customer.customerKey, { limit: 500 })).reverse();
}

/** The events written while `fn` runs, oldest first. */
async function eventsOf(env: TestApp, fn: () => Promise<unknown>): Promise<AuditEvent[]> {
  const before = new Set((await allEvents(env)).map((e) => e.eventId));
  await fn();
  return (await allEvents(env)).filter((e) => !before.has(e.eventId));
}

const asUser = (user: TestUser) => ({ type: 'user', id: String(user.id) });
const targetOf = (user: TestUser) => ({ type: 'user', id: String(user.id), name: user.username });
const brief = (events: AuditEvent[]) => events.map((e) => ({ action: e.action, actor: e.actor, target: e.target }));

/** The link of the reset mail to `to`, once the mail worker has sent it (the user's other mails aside). */
async function resetMailLink(d: Deployment, to: string): Promise<string> {
  for (;;) {
    await d.composition.mailWorker.runOnce();
    const mail = sink.messages.find((m) => m.envelope.to.includes(to) && m.parsed.subject === 'Reset your password');
    const link = mail && resetLinkPattern(d.issuer).exec(mail.parsed.text ?? '')?.[0];
    if (link) return link;
    await sink.waitFor(sink.messages.length + 1, 500).catch(() => {});
  }
}

async function startFlow(d: Deployment, browser: Browser, clientId: string, returnUrl: string): Promise<string> {
  const response = await browser.fetch(`${d.issuer}/jwt/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(returnUrl)}`);
  assert.equal(response.status, 303);
  return new URL(response.headers.get('location')!, d.url).href;
}

describeEachStore('audit events of sign-in, links, resets, import and the CLI', (kind) => {
  test('hosted sign-in: a wrong password is signin.failed, a wrong code signin.failed, the right ones signin.succeeded; all as the user, with the ip', async (t) => {
    const d = await deploy(t, kind);
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD', 'AUTHENTICATOR_APP');
    const user = await createUser(d);
    const secret = await enrolAuthenticator(d, user);
    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    // Naming the user changes nothing: no event.
    assert.deepEqual(await eventsOf(d, async () => assert.equal((await post(browser, flow, { username: user.username })).status, 200)), []);

    const wrong = await eventsOf(d, async () => assert.equal((await post(browser, flow, { password: 'not the password' })).status, 401));
    assert.deepEqual(brief(wrong), [{ action: 'signin.failed', actor: asUser(user), target: targetOf(user) }]);
    assert.equal(wrong[0]!.ip, '127.0.0.1');
    assert.deepEqual(await eventsOf(d, async () => assert.equal((await post(browser, flow, { password: PASSWORD })).status, 200)), []);
    const wrongCode = await eventsOf(d, async () => assert.equal((await post(browser, flow, { otp: '000000' === totpAt(secret, d.clock.now()) ? '111111' : '000000' })).status, 401));
    assert.deepEqual(brief(wrongCode), [{ action: 'signin.failed', actor: asUser(user), target: targetOf(user) }]);
    const done = await eventsOf(d, async () => assert.equal((await post(browser, flow, { otp: totpAt(secret, d.clock.now()) })).status, 303));
    assert.deepEqual(brief(done), [{ action: 'signin.succeeded', actor: asUser(user), target: targetOf(user) }]);

    // A login naming nobody: signin.failed whose target holds nothing of what was typed.
    const stranger = new Browser();
    const other = await startFlow(d, stranger, app.uuid, returnUrl);
    await post(stranger, other, { username: 'nobody-by-this-name' });
    const unknown = await eventsOf(d, () => post(stranger, other, { password: 'hunter2-or-so' }));
    assert.deepEqual(brief(unknown), [{ action: 'signin.failed', actor: { type: 'system', id: '' }, target: { type: 'user', id: '', name: '' } }]);
  });

  test('the login throttle refusing: signin.throttled', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '1', LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '1000' });
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const user = await createUser(d);
    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    await post(browser, flow, { username: user.username });
    const events = await eventsOf(d, async () => {
      let status = 0;
      for (let i = 0; i < 5 && status !== 429; i++) status = (await post(browser, flow, { password: 'wrong password!' })).status;
      assert.equal(status, 429);
    });
    assert.equal(events.at(-1)!.action, 'signin.throttled');
    assert.deepEqual(events.at(-1)!.target, targetOf(user));
    assert.ok(events.slice(0, -1).every((e) => e.action === 'signin.failed'));
  });

  test('a magic link used: magiclink.used as the user; a password reset: password.reset.requested, then password.reset', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'MAGIC_LINK');
    const user = await createUser(d);
    const generated = await d.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: app.uuid, redirectUri: returnUrl });
    assert.equal(generated.statusCode, 200, generated.body);
    // The generate's event carries the correlation id its answer gives.
    const [generatedEvent] = (await allEvents(d)).filter((e) => e.action === 'magiclink.generated');
    assert.equal(generatedEvent!.correlationId, generated.json().correlationId);
    await d.composition.mailWorker.runOnce();
    const mail = [...sink.messages].reverse().find((m) => m.envelope.to.includes(user.email));
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail?.parsed.text ?? '')?.[0];
    assert.ok(link, 'the invite mail holds the link');
    const used = await eventsOf(d, async () => assert.equal((await post(new Browser(), link, {})).status, 303));
    assert.deepEqual(brief(used), [{ action: 'magiclink.used', actor: asUser(user), target: targetOf(user) }]);

    const base = `${d.issuer}`;
    let resetLink = '';
    const requested = await eventsOf(d, async () => {
      assert.equal((await post(new Browser(), `${base}/forgot`, { login: user.username })).status, 200);
      // The page answers before the mail is written (the same time for anyone): its arrival is the end.
      resetLink = await resetMailLink(d, user.email);
    });
    assert.deepEqual(brief(requested), [{ action: 'password.reset.requested', actor: { type: 'system', id: '' }, target: targetOf(user) }]);
    const reset = await eventsOf(d, async () => {
      const answer = await post(new Browser(), resetLink, { newPassword: 'a brand new passphrase', confirmPassword: 'a brand new passphrase' });
      assert.ok(answer.status < 400, `reset: ${answer.status}`);
    });
    // The reset ends the user's sessions too (the magic link opened one): the link's holder did both.
    assert.deepEqual(brief(reset), [
      { action: 'password.reset', actor: asUser(user), target: targetOf(user) },
      { action: 'user.sessions.revoked', actor: asUser(user), target: targetOf(user) },
    ]);
  });

  test('writes of the sign-in\'s own steps are the user\'s: the required new password, an authenticator enrolled on the way in', async (t) => {
    const d = await deploy(t, kind);
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD', 'AUTHENTICATOR_APP');
    const user = await createUser(d);
    await d.composition.services.users.setPassword(d.customer.customerId, user.id, 'temporary password 1', { requireChange: true }, SYSTEM);
    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    await post(browser, flow, { username: user.username });
    assert.equal((await post(browser, flow, { password: 'temporary password 1' })).status, 200);
    let enrolPage = '';
    const changed = await eventsOf(d, async () => {
      const answer = await post(browser, flow, { new_password: 'a brand new secret', confirm_password: 'a brand new secret' });
      assert.equal(answer.status, 200);
      enrolPage = await answer.text();
    });
    assert.deepEqual(brief(changed), [{ action: 'user.password.changed', actor: asUser(user), target: targetOf(user) }]);

    const secret = /name="secret" value="([A-Z2-7]+)"/.exec(enrolPage)?.[1];
    assert.ok(secret, 'the enrolment step shows its secret');
    const enrolled = await eventsOf(d, async () => assert.equal((await post(browser, flow, { secret, otp: totpAt(secret, d.clock.now()) })).status, 200));
    assert.deepEqual(brief(enrolled), [{ action: 'user.mfa.enrolled', actor: asUser(user), target: targetOf(user) }]);
  });

  test('import: one event per created or changed user, none for an unchanged row or a failed one, then import.completed; the CLI acts as cli', async (t) => {
    const d = await deploy(t, kind);
    const { customerId } = d.customer;
    const existing = await createUser(d);
    async function* rows(): AsyncGenerator<ImportRecord> {
      yield { line: 2, values: { username: 'newcomer', email: 'newcomer@example.test', firstName: 'N', lastName: 'C' } };
      yield { line: 3, values: { username: existing.username, email: existing.email, firstName: 'Ada', lastName: 'Lovelace' } };
      yield { line: 4, values: { username: existing.username, email: existing.email, firstName: 'Augusta', lastName: 'Lovelace' } };
      yield { line: 5, values: { username: 'broken', email: 'not an e-mail', firstName: 'B', lastName: 'R' } };
    }
    const events = await eventsOf(d, () => d.composition.services.userImport.importUsers(customerId, rows(), 'jsonl',
      { actor: { type: 'cli', id: 'operator' }, ip: '', requestId: 'import-run', correlationId: '' }));
    const newcomer = (await d.composition.services.users.findByLogin(customerId, 'newcomer'))!;
    assert.deepEqual(brief(events), [
      { action: 'user.created', actor: { type: 'cli', id: 'operator' }, target: { type: 'user', id: String(newcomer.id), name: 'newcomer' } },
      { action: 'user.updated', actor: { type: 'cli', id: 'operator' }, target: targetOf(existing) },
      { action: 'import.completed', actor: { type: 'cli', id: 'operator' }, target: { type: 'import', id: '', name: '1 created, 1 updated, 1 unchanged, 1 failed' } },
    ]);
    assert.ok(events.every((e) => e.requestId === 'import-run'));

    await customerRotateKey.run(parseArgs(['customer', 'rotate-key', '--customer-key', d.customer.customerKey]),
      { app: d.composition, auditContext: { actor: { type: 'cli', id: 'operator' }, ip: '', requestId: 'cli-run', correlationId: '' } });
    // The rotation made the test's client key stale: the events are read through the service.
    const customer = (await d.composition.services.customers.findByKey(d.customer.customerKey))!;
    const { events: latest } = await d.composition.services.audit.list(customerId, { limit: 1 });
    assert.deepEqual(brief(latest), [{ action: 'customer.apikey.rotated', actor: { type: 'cli', id: 'operator' }, target: { type: 'customer', id: d.customer.customerKey, name: customer.displayName } }]);
  });

  test('a change and its event are all or nothing: a recorder that fails rolls the change back; a change that fails writes no event', async (t) => {
    const d = await deploy(t, kind);
    const { customerId } = d.customer;
    const { users, audit } = d.composition.services;
    const user = await createUser(d);
    const { db } = d.composition.store;
    const count = async () => Number((await db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

    // A change that fails after its first event: the event goes with it (the second group's name is refused).
    const before = await count();
    await assert.rejects(d.composition.services.groups.upsert(customerId, [
      { name: 'Fine group', isDefault: false, attributes: {} },
      { name: 'x'.repeat(1000), isDefault: false, attributes: {} },
    ], SYSTEM));
    assert.equal(await d.composition.services.groups.findByName(customerId, 'Fine group'), undefined);
    assert.equal(await count(), before);

    // The event failing (a listener in its transaction throws): the change is rolled back.
    audit.addListener(async () => { throw new Error('the event could not be written'); });
    await assert.rejects(users.update(customerId, { username: user.username, firstName: 'Changed', customAttributes: {} }, SYSTEM), /could not be written/);
    await assert.rejects(users.remove(customerId, user.username, SYSTEM), /could not be written/);
    const stored = (await users.findByLogin(customerId, user.username))!;
    assert.equal(stored.firstName, 'Ada', 'the update was rolled back with its event');
    assert.equal(await count(), before);
  });
});
