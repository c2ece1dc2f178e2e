/**
 * Secrets in URLs never reach the logs, at any level: a magic link's token (/magic/<token>) and an
 * OpenID interaction's uid are replaced in every logged URL (the debug "incoming request" line, the
 * "request completed" line, error lines), whatever route the request reaches.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { compose } from '../../src/compose.ts';
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
  ].map(redactUrl), [
    '/magic/[token]', '/magic/[token]?x=1', '/magic/[token]/', '/MAGIC/[token]/more', '//magic/[token]', '/magic/code',
    '/customers/123/interaction/[uid]', '/customers/123/interaction/[uid]/login', '/customers/123/auth/[uid]', '/customers/123/auth?client_id=a',
    '/api/admin/users/get', '/magicians',
  ]);
});

describeEachStore('logs at every level', (kind) => {
  test('a full landing GET and POST at trace level logs no token', async (t) => {
    const clock = createTestClock(Date.now());
    const { store, owned } = await openTestStore(kind);
    const logs: string[] = [];
    const composition = await compose(
      loadConfig(testEnv({ LATCHKEY_SMTP_URL: sink.url, LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_LOG_LEVEL: 'trace' })),
      { clock, store, logStream: { write: (line) => { logs.push(line); } } },
    );
    const identity = await composition.buildIdentityApp();
    t.after(async () => {
      await identity.close();
      await composition.close();
      if (owned) await store.close();
    });
    const customer = await composition.services.customers.create({ email: `owner-${randomBytes(4).toString('hex')}@example.test` });
    const admin = adminClient(identity, customer, clock);
    const username = `u${randomBytes(4).toString('hex')}`;
    const to = `${username}@example.test`;
    assert.equal((await admin.post('/admin/users/create', { customerKey: Number(customer.customerKey), username, email: to, firstName: 'Ada', lastName: 'Lovelace' })).statusCode, 200);
    const { application } = await composition.services.applications.create(customer.customerId, { name: 'Portal', type: 'JWT', returnUrls: ['https://app.example.test/sso'] });
    await composition.services.policies.create(customer.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' });

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
});
