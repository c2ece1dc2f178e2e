/**
 * The forgotten-password pages over HTTP: the same answer for any input to /forgot (content and
 * time), the hosted pages' headers, 404 for an unknown customer, 410 for a dead link, errors beside
 * their field without echoing a password, bad input as a 4xx page, and no token in any log line.
 * Both stores.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../../src/audit/context.ts';
import { compose } from '../../../src/compose/index.ts';
import { loadConfig } from '../../../src/config.ts';
import { redactUrl } from '../../../src/http/app.ts';
import { createTestClock } from '../../../src/lib/clock.ts';
import { adminClient, testEnv, type TestApp } from '../../helpers/app.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { describeEachStore, openTestStore, type StoreKind } from '../../helpers/stores.ts';
import { NEW_PASSWORD, PASSWORD, mailedLinks, newUser, tokenOf } from './helpers.ts';

const PUBLIC_URL = 'http://id.example.test';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(() => sink.stop());

/** build() with the log lines kept (trace level: every line a request can write). */
async function setup(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<TestApp & { logs: string[] }> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const logs: string[] = [];
  const composition = await compose(
    loadConfig(testEnv({ LATCHKEY_SMTP_URL: sink.url, LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_LOG_LEVEL: 'trace', ...env })),
    { clock, store, logStream: { write: (line) => { logs.push(line); } } },
  );
  const identity = await composition.buildIdentityApp();
  t.after(async () => {
    await identity.close();
    await composition.close();
    if (owned) await store.close();
  });
  const customer = await composition.services.customers.create({ email: `owner-${randomBytes(5).toString('hex')}@example.test` });
  return {
    kind, composition, identity, clock, customer, logs,
    admin: adminClient(identity, customer, clock),
    newCustomer: () => { throw new Error('not used'); },
  };
}

function assertHostedPage(response: LightMyRequestResponse, status: number, title: string): void {
  assert.equal(response.statusCode, status, response.body);
  assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(response.headers['cache-control'], 'no-store');
  assert.equal(response.headers['x-frame-options'], 'DENY');
  assert.match(String(response.headers['content-security-policy']), /default-src 'none'.*form-action 'self';.*frame-ancestors 'none'/);
  assert.match(response.body, new RegExp(`<h1>${title}</h1>`));
}


describeEachStore('Password reset pages', (kind) => {
  test('/forgot: the form, one answer whatever is typed; an unknown customer is a 404', async (t) => {
    const env = await setup(t, kind);
    const base = `/customers/${env.customer.customerKey}`;
    const user = await newUser(env);

    const form = await env.identity.inject({ method: 'GET', url: `${base}/forgot` });
    assertHostedPage(form, 200, 'Forgot your password\\?');
    assert.match(form.body, /<label for="login">Username or e-mail<\/label>/);
    assert.match(form.body, /<button type="submit">Send reset link<\/button>/);

    const answers = [];
    for (const login of [user.username, user.email, 'nobody-at-all', 'nobody@example.test', '', 'x'.repeat(5000)]) {
      answers.push(await env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: FORM, payload: new URLSearchParams({ login }).toString() }));
    }
    assertHostedPage(answers[0]!, 200, 'Check your mail');
    assert.match(answers[0]!.body, /If an account exists for what you typed, a mail with a link to reset its password is on its way/);
    for (const answer of answers.slice(1)) {
      assert.equal(answer.statusCode, 200);
      assert.equal(answer.body, answers[0]!.body, 'the same page whatever was typed');
    }
    assert.equal((await mailedLinks(env, sink, user.email, 2)).length, 2, 'the known user got a mail for each');

    for (const path of ['/customers/no-such-customer/forgot', `/customers/${'9'.repeat(90)}/forgot`]) {
      assertHostedPage(await env.identity.inject({ method: 'GET', url: path }), 404, 'Not found');
      assertHostedPage(await env.identity.inject({ method: 'POST', url: path, headers: FORM, payload: 'login=x' }), 404, 'Not found');
    }
    assertHostedPage(await env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: { 'content-type': 'application/xml' }, payload: '<login/>' }),
      415, 'This request could not be handled');
    assertHostedPage(await env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: { 'content-type': 'application/json' }, payload: '{"login":' }),
      400, 'This request could not be handled');
  });

  // What would tell a known account from an unknown one is the time of the answer; it cannot depend on the
  // account when the account is looked up only after the answer has gone. That order is what is asserted
  // (no timed assertion): the lookup starts after the caller holds the answer, for either kind of login.
  test('/forgot answers before the account is looked up, known or unknown', async (t) => {
    const env = await setup(t, kind);
    const base = `/customers/${env.customer.customerKey}`;
    const known = await newUser(env);
    const { passwordResets } = env.composition.services;
    const request = passwordResets.request.bind(passwordResets);
    let answered = false;
    const lookups: { login: string; afterAnswer: boolean }[] = [];
    t.mock.method(passwordResets, 'request', async (customer: Parameters<typeof request>[0], login: string) => {
      lookups.push({ login, afterAnswer: answered });
      return request(customer, login, SYSTEM);
    });
    for (const login of [known.username, 'nobody-here']) {
      answered = false;
      const response = await env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: FORM, payload: new URLSearchParams({ login }).toString() });
      answered = true;
      assert.equal(response.statusCode, 200);
      while (!lookups.some((lookup) => lookup.login === login)) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual(lookups, [{ login: known.username, afterAnswer: true }, { login: 'nobody-here', afterAnswer: true }]);
  });

  test('/reset/<token>: a GET never uses it; errors beside their field; set once, then 410; no token in any log line', async (t) => {
    const env = await setup(t, kind);
    const { customerId, customerKey } = env.customer;
    const { users, ssoSessions } = env.composition.services;
    const user = await newUser(env);
    const session = await ssoSessions.open(customerId, user.id, ['pwd'], { userAgent: 'test', address: '203.0.113.1' });
    await env.identity.inject({ method: 'POST', url: `/customers/${customerKey}/forgot`, headers: FORM, payload: `login=${user.username}` });
    const [link] = await mailedLinks(env, sink, user.email);
    const token = tokenOf(link!);
    const path = new URL(link!).pathname;
    const post = (fields: Record<string, string>) => env.identity.inject({ method: 'POST', url: path, headers: FORM, payload: new URLSearchParams(fields).toString() });

    for (let i = 0; i < 2; i++) {
      const form = await env.identity.inject({ method: 'GET', url: path });
      assertHostedPage(form, 200, 'Choose a new password');
      assert.match(form.body, /<label for="newPassword">New password<\/label>/);
      assert.match(form.body, /<label for="confirmPassword">Confirm password<\/label>/);
      assert.match(form.body, /<button type="submit">Set password<\/button>/);
      assert.ok(!form.body.includes(token), 'the page does not repeat the token');
    }

    const mismatch = await post({ newPassword: NEW_PASSWORD, confirmPassword: 'something else entirely' });
    assertHostedPage(mismatch, 400, 'Choose a new password');
    assert.match(mismatch.body, /<input class="wide" id="confirmPassword"[^>]* aria-describedby="confirmPassword-error" aria-invalid="true">\n<p class="error" id="confirmPassword-error">The two passwords are not the same.<\/p>/);
    assert.ok(!mismatch.body.includes(NEW_PASSWORD) && !mismatch.body.includes('something else entirely'), 'what was typed is never echoed');

    const short = await post({ newPassword: 'short', confirmPassword: 'short' });
    assertHostedPage(short, 400, 'Choose a new password');
    assert.match(short.body, /<p class="error" id="newPassword-error">The password must be 8 to 128 characters.<\/p>/);
    const empty = await post({});
    assert.match(empty.body, /id="newPassword-error">Enter a new password.</);
    assert.match(empty.body, /id="confirmPassword-error">Enter the new password again.</);
    assert.ok(await ssoSessions.current(customerId, session.value), 'refused: nothing changed yet');

    const done = await post({ newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD });
    assertHostedPage(done, 200, 'Your password is set');
    assert.match(String(done.headers['set-cookie']), new RegExp(`^lk_sso=; Path=/customers/${customerKey}/; Max-Age=0; HttpOnly; SameSite=Lax$`));
    assert.ok(await users.verifyCredentials(customerId, user.username, NEW_PASSWORD));
    assert.equal(await users.verifyCredentials(customerId, user.username, PASSWORD), undefined);
    assert.equal(await ssoSessions.current(customerId, session.value), undefined, 'the session ended');

    assertHostedPage(await env.identity.inject({ method: 'GET', url: path }), 410, 'This reset link cannot be used');
    assertHostedPage(await post({ newPassword: 'another passphrase', confirmPassword: 'another passphrase' }), 410, 'This reset link cannot be used');
    assertHostedPage(await post({ newPassword: 'x', confirmPassword: 'y' }), 410, 'This reset link cannot be used');
    assertHostedPage(await env.identity.inject({ method: 'GET', url: `/customers/${customerKey}/reset/${'A'.repeat(43)}` }), 410, 'This reset link cannot be used');
    assert.equal((await env.identity.inject({ method: 'GET', url: `/customers/${customerKey}/reset/${'A'.repeat(300)}` })).statusCode, 404, 'too long for a route');
    assertHostedPage(await env.identity.inject({ method: 'GET', url: `/customers/nobody/reset/${token}` }), 404, 'Not found');

    assert.equal(redactUrl(`/customers/${customerKey}/reset/${token}?x=1`), `/customers/${customerKey}/reset/[token]?x=1`);
    const logged = env.logs.join('\n');
    assert.match(logged, /\/reset\/\[token\]/, 'the requests were logged');
    assert.ok(!logged.includes(token), 'the token is in no log line');
  });

  test('the pages share the landing\'s per-address budget: over it, a 429 page with Retry-After', async (t) => {
    const env = await setup(t, kind, { LATCHKEY_RATE_LIMIT_LANDING: '3/60' });
    const base = `/customers/${env.customer.customerKey}`;
    const ask = () => env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: FORM, payload: 'login=someone', remoteAddress: '198.51.100.7' });
    assertHostedPage(await ask(), 200, 'Check your mail');
    assertHostedPage(await env.identity.inject({ method: 'GET', url: `${base}/reset/${'A'.repeat(43)}`, remoteAddress: '198.51.100.7' }), 410, 'This reset link cannot be used');
    assertHostedPage(await ask(), 200, 'Check your mail');
    const refused = await ask();
    assertHostedPage(refused, 429, 'Too many requests');
    assert.match(String(refused.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.match(String(refused.headers.ratelimit), /^"landing";r=0;t=\d+$/);
    const elsewhere = await env.identity.inject({ method: 'POST', url: `${base}/forgot`, headers: FORM, payload: 'login=someone', remoteAddress: '198.51.100.8' });
    assertHostedPage(elsewhere, 200, 'Check your mail');
  });
});
