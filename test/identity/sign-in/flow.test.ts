/**
 * The hosted sign-in over real sockets, the test playing the browser (a cookie jar honouring Path):
 * a flow is bound to the browser that started it; nothing tells a known username from an unknown
 * one (content, and work: each wrong attempt costs one argon2id verification, the unknown user's against a
 * dummy hash, so neither answers sooner); the login throttle bounds concurrent
 * password checks; a mailed code has 5 tries and is one with its link; a required new password is
 * asked before going on.
 */
import assert from 'node:assert/strict';
import argon2 from 'argon2';
import { after, before, test } from 'node:test';
import { SYSTEM } from '../../../src/audit/context.ts';
import { Browser } from '../../helpers/relying-party.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { createApplication, createUser, deploy, mailedCode, PASSWORD, type Deployment } from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await sink?.stop(); });

/** Starts a JWT sign-in in `browser`; the flow page's absolute URL. */
async function startFlow(d: Deployment, browser: Browser, clientId: string, returnUrl: string): Promise<string> {
  const response = await browser.fetch(`${d.issuer}/jwt/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(returnUrl)}`);
  assert.equal(response.status, 303);
  const location = response.headers.get('location') ?? '';
  assert.match(location, /\/sign-in\/[A-Za-z0-9_-]{43}$/);
  return new URL(location, d.url).href;
}

const post = (browser: Browser, url: string, fields: Record<string, string>) =>
  browser.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });


describeEachStore('hosted sign-in flows', (kind) => {
  test('a flow URL opened in another browser is refused (410), and so is an unknown flow; the first browser goes on', async (t) => {
    const d = await deploy(t, kind);
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const user = await createUser(d);
    const mine = new Browser();
    const flow = await startFlow(d, mine, app.uuid, returnUrl);
    const binding = mine.cookiesFor(new URL(flow)).find((c) => c.name === 'lk_signin');
    assert.ok(binding);

    const other = new Browser();
    const elsewhere = await other.fetch(flow);
    assert.equal(elsewhere.status, 410);
    assert.match(await elsewhere.text(), /<h1>This sign-in has ended<\/h1>/);
    // Another browser with a binding of its own: still not this flow.
    await startFlow(d, other, app.uuid, returnUrl);
    assert.equal((await post(other, flow, { username: user.username })).status, 410);
    assert.equal((await mine.fetch(flow.replace(/[A-Za-z0-9_-]{43}$/, 'A'.repeat(43)))).status, 410);

    const shown = await mine.fetch(flow);
    assert.equal(shown.status, 200);
    assert.equal((await post(mine, flow, { username: user.username })).status, 200);
    const done = await post(mine, flow, { password: PASSWORD });
    assert.equal(done.status, 303);
    assert.equal(done.headers.get('location'), `${d.issuer}/jwt/authorize?client_id=${app.uuid}&redirect_uri=${encodeURIComponent(returnUrl)}`);
    const back = await mine.fetch(done.headers.get('location')!);
    assert.equal(back.status, 303);
    assert.match(back.headers.get('location') ?? '', new RegExp(`^${returnUrl}\\?id_token=`));
    // The flow is spent.
    assert.equal((await mine.fetch(flow)).status, 410);
  });

  test("30 concurrent wrong passwords for one user: at most the throttle's budget are checked, the rest are 429 pages", async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '5', LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '1000' });
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const user = await createUser(d);
    const flows = await Promise.all(Array.from({ length: 30 }, async () => {
      const browser = new Browser();
      const flow = await startFlow(d, browser, app.uuid, returnUrl);
      assert.equal((await post(browser, flow, { username: user.username })).status, 200);
      return { browser, flow };
    }));
    const answers = await Promise.all(flows.map(({ browser, flow }) => post(browser, flow, { password: 'wrong password!' })));
    const statuses = answers.map((r) => r.status);
    const checked = statuses.filter((s) => s === 401).length;
    const refused = statuses.filter((s) => s === 429).length;
    assert.equal(checked + refused, 30, statuses.join(','));
    assert.ok(checked <= 5 && checked >= 1, `checked ${checked}`);
    const throttled = answers.find((r) => r.status === 429)!;
    assert.match(throttled.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.match(await throttled.text(), /<h1>Too many attempts<\/h1>/);
    // Even the right password is refused while the user's key is blocked.
    const late = new Browser();
    const flow = await startFlow(d, late, app.uuid, returnUrl);
    await post(late, flow, { username: user.username });
    assert.equal((await post(late, flow, { password: PASSWORD })).status, 429);
  });

  test('a mailed code: 5 tries in this browser, then the flow ends; the link used in any browser ends the code', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Mailbox' }, 'MAGIC_LINK');
    const user = await createUser(d);

    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    assert.equal((await post(browser, flow, { username: user.email })).status, 200);
    const { code } = await mailedCode(d, sink, user.email);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let left = 4; left >= 1; left--) {
      const answer = await post(browser, flow, { code: wrong });
      assert.equal(answer.status, 401);
      assert.ok((await answer.text()).includes(`The code is incorrect. ${left === 1 ? '1 attempt' : `${left} attempts`} left.`));
    }
    assert.equal((await post(browser, flow, { code: wrong })).status, 410);
    assert.equal((await post(browser, flow, { code })).status, 410);

    // A new mail; its link is used at the landing (another browser): the code is then refused.
    const second = await startFlow(d, browser, app.uuid, returnUrl);
    await post(browser, second, { username: user.username });
    const mailed = await mailedCode(d, sink, user.email);
    assert.notEqual(mailed.code + mailed.link, code);
    const landing = await new Browser().fetch(mailed.link, { method: 'POST' });
    assert.equal(landing.status, 303);
    assert.equal((await post(browser, second, { code: mailed.code })).status, 410);
  });

  test('nothing tells a known username from an unknown one: the same pages, and one argon2id verification each', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SITE_LOGIN_USER_ATTEMPTS: '1000', LATCHKEY_SITE_LOGIN_IP_ATTEMPTS: '100000', LATCHKEY_SMTP_URL: sink.url });
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const user = await createUser(d);
    const disabled = await createUser(d);
    assert.equal((await d.admin.post('/admin/users/disable', { customerKey: Number(d.customer.customerKey), username: disabled.username })).statusCode, 200);

    // Time is what would tell them apart; it follows from the work done, which is counted (no timed assertion).
    const verifications = t.mock.method(argon2, 'verify');
    async function attempt(login: string): Promise<{ verifications: number; pages: string[]; statuses: number[] }> {
      const browser = new Browser();
      const flow = await startFlow(d, browser, app.uuid, returnUrl);
      const before = verifications.mock.callCount();
      const first = await post(browser, flow, { username: login });
      const second = await post(browser, flow, { password: 'not the password' });
      const pages = [await first.text(), await second.text()];
      return { verifications: verifications.mock.callCount() - before, pages, statuses: [first.status, second.status] };
    }
    const known = await attempt(user.username);
    const unknown = await attempt('nobody-here');
    // The same bytes once the typed login is taken out (the password page shows what was typed).
    const strip = (page: string, login: string) => page.replaceAll(login, 'LOGIN');
    assert.deepEqual(unknown.statuses, [200, 401]);
    assert.deepEqual(known.statuses, unknown.statuses);
    assert.deepEqual(known.pages.map((p) => strip(p, user.username)), unknown.pages.map((p) => strip(p, 'nobody-here')));
    const off = await attempt(disabled.username);
    assert.deepEqual(off.pages.map((p) => strip(p, disabled.username)), unknown.pages.map((p) => strip(p, 'nobody-here')));
    assert.ok(unknown.pages[1]!.includes('Wrong username or password.'));
    assert.deepEqual([known.verifications, unknown.verifications, off.verifications], [1, 1, 1], 'one argon2id verification for a known, an unknown and a disabled user alike');

    // MAGIC_LINK: the same "mail on its way" page for both.
    const magicApp = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Mailbox' }, 'MAGIC_LINK');
    const pageFor = async (login: string) => {
      const browser = new Browser();
      const flow = await startFlow(d, browser, magicApp.uuid, returnUrl);
      const answer = await post(browser, flow, { username: login });
      return [answer.status, await answer.text()];
    };
    assert.deepEqual(await pageFor(user.email), await pageFor('nobody@example.test'));
  });

  test('a password set with a required change: New password and Confirm password are asked before going on, and the flag clears', async (t) => {
    const d = await deploy(t, kind);
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const user = await createUser(d);
    await d.composition.services.users.setPassword(d.customer.customerId, user.id, 'temporary password 1', { requireChange: true }, SYSTEM);
    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    await post(browser, flow, { username: user.username });
    const asked = await post(browser, flow, { password: 'temporary password 1' });
    assert.equal(asked.status, 200);
    const html = await asked.text();
    for (const name of ['New password', 'Confirm password', 'Set password']) assert.ok(html.includes(`>${name}<`), name);
    const mismatch = await post(browser, flow, { new_password: 'a brand new secret', confirm_password: 'another one' });
    assert.equal(mismatch.status, 400);
    assert.ok((await mismatch.text()).includes('The passwords do not match.'));
    const done = await post(browser, flow, { new_password: 'a brand new secret', confirm_password: 'a brand new secret' });
    assert.equal(done.status, 303);
    const fresh = await d.composition.services.users.findByIdWithGroups(d.customer.customerId, user.id);
    assert.equal(fresh?.passwordChangeRequired, false);
    assert.ok(await d.composition.services.users.verifyCredentials(d.customer.customerId, user.username, 'a brand new secret'));
    const back = await browser.fetch(done.headers.get('location')!);
    assert.match(back.headers.get('location') ?? '', new RegExp(`^${returnUrl}\\?id_token=`));
  });

  test('bad input is a 4xx page, never a 500: malformed bodies, other content types, long or unknown ids, an unknown customer', async (t) => {
    const d = await deploy(t, kind);
    const returnUrl = `${d.app.origin}/r`;
    const app = await createApplication(d, { type: 'JWT', returnUrls: [returnUrl], name: 'Tracker' }, 'PASSWORD');
    const browser = new Browser();
    const flow = await startFlow(d, browser, app.uuid, returnUrl);
    const cases: [string, RequestInit, number][] = [
      [flow, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":' }, 400],
      [flow, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":["a","b"]}' }, 400],
      [flow, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'username=x' }, 400],
      [flow, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=a&username=b' }, 400],
      [`${d.issuer}/sign-in/${'x'.repeat(200)}`, {}, 404],
      [`${d.issuer}/sign-in/short`, {}, 410],
      [`${d.url}/customers/999999999/sign-in/${'A'.repeat(43)}`, {}, 404],
      [`${d.issuer}/jwt/authorize?client_id=not-a-uuid&redirect_uri=x`, {}, 400],
      [`${d.issuer}/jwt/authorize?client_id=${app.uuid}&client_id=${app.uuid}&redirect_uri=${encodeURIComponent(returnUrl)}`, {}, 400],
      [`${d.issuer}/jwt/authorize?client_id=${app.uuid}&redirect_uri=${encodeURIComponent(returnUrl)}&state=a&state=b`, {}, 400],
    ];
    for (const [url, init, status] of cases) {
      const answer = await browser.fetch(url, init);
      assert.equal(answer.status, status, `${init.method ?? 'GET'} ${url} ${String(init.body ?? '')}`);
      assert.equal(answer.headers.get('location'), null);
      if (status !== 404) assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
    }
    // The flow is still usable after all that.
    assert.equal((await browser.fetch(flow)).status, 200);
  });
});
