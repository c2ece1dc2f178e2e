/**
 * Secrets in URLs never reach the logs, at any level: a magic link's token (/magic/<token>), the console
 * owner's one-time sign-in token (/console/first-sign-in/<token>) and an OpenID interaction's uid are replaced in every logged URL (the debug "incoming request" line, the
 * "request completed" line, error lines), whatever route the request reaches.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { redactUrl } from '../../src/http/app.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { adminClient, testEnv } from '../helpers/app.ts';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore, openTestStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'http://id.example.test';
const LINK = /http:\/\/id\.example\.test\/magic\/([A-Za-z0-9_-]{43})/;

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(() => sink.stop());

test('redactUrl replaces the secret path segments and keeps the rest', () => {
  const token = randomBytes(32).toString('base64url');
  assert.deepEqual([
    `/magic/${token}`, `/magic/${token}?x=1`, `/magic/${token}/`, `/MAGIC/${token}/more`, `//magic/${token}`, '/magic/code',
    '/customers/123/interaction/abc_DEF-1', '/customers/123/interaction/abc/login', '/customers/123/auth/xyz', '/customers/123/auth?client_id=a',
    '/api/admin/users/get', '/magicians',
    `/console/first-sign-in/${token}`, `/console/first-sign-in/${token}?x=1`, `/prefix/console/First-Sign-In/${token}/more`, '/console/first-sign-in',
  ].map(redactUrl), [
    '/magic/[token]', '/magic/[token]?x=1', '/magic/[token]/', '/MAGIC/[token]/more', '//magic/[token]', '/magic/code',
    '/customers/123/interaction/[uid]', '/customers/123/interaction/[uid]/login', '/customers/123/auth/[uid]', '/customers/123/auth?client_id=a',
    '/api/admin/users/get', '/magicians',
    '/console/first-sign-in/[token]', '/console/first-sign-in/[token]?x=1', '/prefix/console/First-Sign-In/[token]/more', '/console/first-sign-in',
  ]);
});

describeEachStore('logs at every level', (kind) => {
  /** The identity face on `kind` at trace level, its log lines kept in `logs`, closed after the test. */
  async function traceLoggedFace(t: TestContext, env: Record<string, string> = {}) {
    const clock = createTestClock(Date.now());
    const { store, owned } = await openTestStore(kind);
    const logs: string[] = [];
    const composition = await compose(
      loadConfig(testEnv({ ...env, LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_LOG_LEVEL: 'trace' })),
      { clock, store, logStream: { write: (line) => { logs.push(line); } } },
    );
    const identity = await composition.buildIdentityApp();
    t.after(async () => {
      await identity.close();
      await composition.close();
      if (owned) await store.close();
    });
    return { clock, logs, composition, identity };
  }

  test('a full landing GET and POST at trace level logs no token', async (t) => {
    const { clock, logs, composition, identity } = await traceLoggedFace(t, { LATCHKEY_SMTP_URL: sink.url });
    const customer = await composition.services.customers.create({ email: `owner-${randomBytes(4).toString('hex')}@example.test` });
    const admin = adminClient(identity, customer, clock);
    const username = `u${randomBytes(4).toString('hex')}`;
    const to = `${username}@example.test`;
    assert.equal((await admin.post('/admin/users/create', { customerKey: Number(customer.customerKey), username, email: to, firstName: 'Ada', lastName: 'Lovelace' })).statusCode, 200);
    const { application } = await composition.services.applications.create(customer.customerId, { name: 'Portal', type: 'JWT', returnUrls: ['https://app.example.test/sso'] }, SYSTEM);
    await composition.services.policies.create(customer.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }, SYSTEM);

    const generated = await admin.post('/admin/magiclink/generate', { customerKey: Number(customer.customerKey), username, applicationUuid: application.uuid, redirectUri: 'https://app.example.test/sso' });
    assert.equal(generated.statusCode, 200, generated.body);
    await composition.mailWorker.runOnce();
    const deadline = Date.now() + 10_000;
    let token: string | undefined;
    while (!token) {
      const mail = sink.messages.find((m) => m.envelope.to.includes(to));
      token = mail && LINK.exec(mail.parsed.text ?? '')?.[1];
      if (!token) {
        assert.ok(Date.now() < deadline, 'the mail arrives');
        await sink.waitFor(sink.messages.length + 1, 2_000).catch(() => {});
      }
    }

    const before = logs.length;
    assert.equal((await identity.inject({ method: 'GET', url: `/magic/${token}` })).statusCode, 200);
    const posted = await identity.inject({ method: 'POST', url: `/magic/${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    assert.equal(posted.statusCode, 303, posted.body);
    // Used, and on routes the landing does not own: the token is still a secret to the logs.
    assert.equal((await identity.inject({ method: 'GET', url: `/magic/${token}` })).statusCode, 410);
    assert.equal((await identity.inject({ method: 'GET', url: `/magic/${token}/more?q=1` })).statusCode, 404);
    assert.equal((await identity.inject({ method: 'GET', url: `/MAGIC/${token}` })).statusCode, 404);
    assert.equal((await identity.inject({ method: 'GET', url: `/customers/${customer.customerKey}/interaction/${token}` })).statusCode < 500, true);

    const lines = logs.slice(before);
    assert.ok(lines.some((line) => /"incoming request"/.test(line) && line.includes('/magic/[token]')), 'the debug arrival line is there, redacted');
    assert.ok(lines.filter((line) => /"request completed"/.test(line)).length >= 6);
    assert.deepEqual(lines.filter((line) => line.includes(token!)), []);
  });

  test('the console one-time sign-in link, shown, refused, used, used again and mistyped, at trace level logs no token', async (t) => {
    const { logs, composition, identity } = await traceLoggedFace(t);
    const customer = await composition.services.customers.create({ email: `owner-${randomBytes(4).toString('hex')}@example.test` });
    const token = await composition.services.consoleFirstSignIn.issue(customer.customerId);
    const path = `/console/first-sign-in/${token}`;
    const before = logs.length;

    const shown = await identity.inject({ method: 'GET', url: path });
    assert.equal(shown.statusCode, 200);
    const cookie = [shown.headers['set-cookie']].flat().map((c) => String(c).split(';')[0]).join('; ');
    const csrf = encodeURIComponent(/name="_csrf" value="([^"]+)"/.exec(shown.body)![1]);
    const post = (payload: string) => identity.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, payload });
    assert.equal((await post(`_csrf=${csrf}&newPassword=a+long+passphrase&confirmPassword=another+one`)).statusCode, 400);
    assert.equal((await post(`newPassword=a+long+passphrase&confirmPassword=a+long+passphrase`)).statusCode, 403, 'no CSRF token');
    assert.equal((await post(`_csrf=${csrf}&newPassword=a+long+passphrase&confirmPassword=a+long+passphrase`)).statusCode, 303);
    assert.equal((await identity.inject({ method: 'GET', url: path })).statusCode, 410);
    assert.equal((await identity.inject({ method: 'GET', url: `${path}/more?q=1` })).statusCode, 404);
    assert.equal((await identity.inject({ method: 'GET', url: `/CONSOLE/FIRST-SIGN-IN/${token}` })).statusCode, 404);

    const lines = logs.slice(before);
    assert.ok(lines.some((line) => /"incoming request"/.test(line) && line.includes('/console/first-sign-in/[token]')), 'the debug arrival line is there, redacted');
    assert.ok(lines.filter((line) => /"request completed"/.test(line)).length >= 7);
    assert.deepEqual(lines.filter((line) => line.includes(token)), []);
  });
});
