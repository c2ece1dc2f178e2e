/**
 * The forgotten-password pages in a real browser (Debian's chromium through playwright-core), by
 * their accessible names: Forgot → the mail a real SMTP server received → the reset link → a wrong
 * confirmation shown beside its field → Set password → the new password signs in, the session opened
 * before is gone, and the used link answers 410. Opening the link alone leaves it usable. Skips saying
 * why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { build, type TestApp } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { describeEachStore, type StoreKind } from '../../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { NEW_PASSWORD, PASSWORD, mailedLinks, newUser } from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await closeBrowser(); await sink.stop(); });

interface Deployment extends TestApp {
  issuer: string;
}

async function deploy(t: TestContext, kind: StoreKind): Promise<Deployment> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url, LATCHKEY_SMTP_URL: sink.url });
  await server.identity.listen({ port, host: '127.0.0.1' });
  return { ...server, issuer: `${url}/customers/${server.customer.customerKey}` };
}

/** A page that records console errors (a CSP violation shows up there). */
async function watchedPage(t: TestContext): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error' || message.type() === 'warning') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  return { page, errors };
}

/** The browser's own note on a 400 or 410 document is not a violation. */
const violations = (errors: string[]) => errors.filter((text) => !/^Failed to load resource: the server responded with a status of (400|410) /.test(text));

if (!findChromium()) {
  if (process.env.CI === 'true') test('password reset browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('password reset browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('forgotten password in a browser', (kind) => {
    test('forgot → mail → link → Set password: the new password signs in, the old session is gone, the link then answers 410', async (t) => {
      const d = await deploy(t, kind);
      const { customerId } = d.customer;
      const { users, ssoSessions } = d.composition.services;
      const user = await newUser(d);
      const before = await ssoSessions.open(customerId, user.id, ['pwd'], { userAgent: 'another browser', address: '198.51.100.4' });
      const { page, errors } = await watchedPage(t);

      const form = await page.goto(`${d.issuer}/forgot`);
      assert.equal(form?.status(), 200);
      await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
      await page.getByLabel('Username or e-mail').fill(user.email);
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
      await page.getByText('If an account exists for what you typed, a mail with a link to reset its password is on its way.').waitFor();

      const [link] = await mailedLinks(d, sink, user.email);
      assert.ok(link?.startsWith(`${d.issuer}/reset/`));

      // Opening the link (twice, as a mail scanner and then the person might) uses nothing.
      assert.equal((await page.goto(link))?.status(), 200);
      assert.equal((await page.goto(link))?.status(), 200);
      await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
      assert.ok(await ssoSessions.current(customerId, before.value), 'a look ends no session');

      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill('not the same passphrase');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('alert').waitFor();
      const confirm = page.getByLabel('Confirm password');
      assert.equal(await confirm.getAttribute('aria-invalid'), 'true');
      assert.equal(await page.locator(`#${await confirm.getAttribute('aria-describedby')}`).textContent(), 'The two passwords are not the same.');
      assert.equal(await page.getByLabel('New password').inputValue(), '', 'passwords are never written back');
      assert.equal(await users.verifyCredentials(customerId, user.username, NEW_PASSWORD), undefined, 'nothing set yet');

      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('heading', { name: 'Your password is set' }).waitFor();

      assert.ok(await users.verifyCredentials(customerId, user.username, NEW_PASSWORD), 'the new password signs in');
      assert.equal(await users.verifyCredentials(customerId, user.username, PASSWORD), undefined, 'the old one does not');
      assert.equal(await ssoSessions.current(customerId, before.value), undefined, 'the session opened before is gone');

      const again = await page.goto(link);
      assert.equal(again?.status(), 410);
      await page.getByRole('heading', { name: 'This reset link cannot be used' }).waitFor();
      assert.equal(again?.headers()['cache-control'], 'no-store');
      assert.deepEqual(violations(errors), []);
    });

    test('an unknown account gets the same page, and no mail', async (t) => {
      const d = await deploy(t, kind);
      const { page, errors } = await watchedPage(t);
      const sent = sink.messages.length;
      await page.goto(`${d.issuer}/forgot`);
      await page.getByLabel('Username or e-mail').fill('nobody-by-this-name');
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
      await page.getByText('If an account exists for what you typed, a mail with a link to reset its password is on its way.').waitFor();
      await d.composition.mailWorker.runOnce();
      assert.equal(await d.composition.store.db.selectFrom('mail_outbox').select('id').where('customer_id', '=', d.customer.customerId).executeTakeFirst(), undefined);
      assert.equal(sink.messages.length, sent);
      assert.deepEqual(violations(errors), []);
    });
  });
}
