/**
 * The account page `<issuer>/account` in a real browser (Chromium through playwright-core), both
 * stores: a user signed in through an INVITE link to a JWT application sees their name, e-mail and
 * remaining recovery codes, generates a new set (10 codes, the old ones dead), and signs out
 * everywhere (another browser's session ends too). Without a session the page shows no account;
 * cross-site POSTs are refused and change nothing. `Change password` checks the current password and
 * the rules (errors beside the fields), ends the other browsers' sessions and keeps this one's.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { SYSTEM } from '../../../src/audit/context.ts';
import { SSO_COOKIE } from '../../../src/identity/sso-sessions/service.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { describeEachStore, type StoreKind } from '../../helpers/stores.ts';
import { deploy, inviteLink, user, type Deployment } from '../sign-out/deployment.ts';

after(closeBrowser);

interface Setting {
  d: Deployment;
  page: Page;
  errors: string[];
  person: { username: string; email: string; id: number };
}

async function setting(t: TestContext, kind: StoreKind): Promise<Setting> {
  const d = await deploy(t, kind);
  const person = await user(d, 'ada');
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  return { d, page, errors, person };
}

/** A real sign-in of this browser: the INVITE link to a JWT application opens the SSO session. */
async function signIn(s: Setting): Promise<void> {
  const returnUrl = `${s.d.app.origin}/jwt/return`;
  const created = await s.d.admin.post('/admin/applications/create', { customerKey: s.d.customerKey, name: 'Reports', type: 'JWT', returnUrls: [returnUrl] });
  assert.equal(created.statusCode, 200, created.body);
  const uuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
  assert.equal((await s.d.admin.post('/admin/policies/create', { customerKey: s.d.customerKey, applicationUuid: uuid, firstFactor: 'MAGIC_LINK' })).statusCode, 200);
  await s.page.goto(await inviteLink(s.d, s.person.username, s.person.email, uuid, returnUrl));
  await s.page.getByRole('button', { name: 'Continue to Reports' }).click();
  await s.page.waitForURL((url) => url.href.startsWith(`${returnUrl}?id_token=`));
}

async function ssoCookie(context: BrowserContext, s: Setting) {
  return (await context.cookies(`${s.d.issuer}/`)).find((c) => c.name === SSO_COOKIE);
}

/** A second browser of the same user, signed in by a session opened directly (as a sign-in would). */
async function secondBrowser(t: TestContext, s: Setting): Promise<{ context: BrowserContext; value: string }> {
  const { value } = await s.d.composition.services.ssoSessions.open(s.d.customer.customerId, s.person.id, ['email'], { userAgent: 'other', address: '127.0.0.1' });
  const context = await browser(t);
  await context.addCookies([{ name: SSO_COOKIE, value, url: `${s.d.issuer}/`, httpOnly: true, sameSite: 'Lax' }]);
  return { context, value };
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('account page browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('account page browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('the account page in a browser', (kind) => {
    test('shows who is signed in and the codes left; Generate new codes shows 10 once and ends the old set; a cross-site POST changes nothing; Sign out everywhere ends every browser\'s session', async (t) => {
      const s = await setting(t, kind);
      const { recoveryCodes, ssoSessions } = s.d.composition.services;
      const customerId = s.d.customer.customerId;
      const old = await recoveryCodes.generate(customerId, s.person.id);
      assert.equal(await recoveryCodes.use(customerId, s.person.id, old[0]), true);
      await signIn(s);
      const cookie = await ssoCookie(s.page.context(), s);
      assert.ok(cookie, 'the sign-in set the SSO cookie');
      const other = await secondBrowser(t, s);

      const shown = await s.page.goto(`${s.d.issuer}/account`);
      assert.equal(shown?.status(), 200);
      assert.equal(shown?.headers()['cache-control'], 'no-store');
      await s.page.getByRole('heading', { name: 'Your account' }).waitFor();
      const main = s.page.getByRole('main');
      assert.match(await main.innerText(), /Ada Lovelace/);
      assert.match(await main.innerText(), /ada@example\.test/);
      const codes = s.page.getByRole('region', { name: 'Recovery codes' });
      assert.match(await codes.innerText(), /You have 9 unused recovery codes\./);

      await codes.getByRole('button', { name: 'Generate new codes' }).click();
      await s.page.getByRole('heading', { name: 'Your new recovery codes' }).waitFor();
      const fresh = (await s.page.getByRole('listitem').allInnerTexts()).map((text) => text.trim());
      assert.equal(fresh.length, 10);
      assert.equal(new Set(fresh).size, 10);
      for (const code of fresh) assert.match(code, /^[A-Za-z0-9-]{10,}$/, code);
      assert.equal(await recoveryCodes.use(customerId, s.person.id, old[1]), false, 'an old code no longer works');
      assert.equal(await recoveryCodes.use(customerId, s.person.id, fresh[0]), true, 'a new one does');

      await s.page.getByRole('button', { name: 'Continue' }).click();
      await s.page.getByRole('heading', { name: 'Your account' }).waitFor();
      assert.match(await s.page.getByRole('region', { name: 'Recovery codes' }).innerText(), /You have 9 unused recovery codes\./);

      // Another site's POSTs, even carrying the session cookie, are refused and generate or end nothing.
      const forgeries: Record<string, string>[] = [{ origin: s.d.app.origin }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }];
      for (const action of ['recovery-codes', 'sign-out-everywhere', 'password']) {
        for (const headers of forgeries) {
          const forged: Response = await fetch(`${s.d.issuer}/account/${action}`, {
            method: 'POST', body: '',
            headers: { ...headers, cookie: `${SSO_COOKIE}=${cookie.value}`, 'content-type': 'application/x-www-form-urlencoded' },
          });
          assert.equal(forged.status, 403, `${action} ${JSON.stringify(headers)}`);
          assert.doesNotMatch(await forged.text(), /<li>/);
        }
      }
      assert.equal(await recoveryCodes.remaining(customerId, s.person.id), 9, 'no new set');
      assert.equal(await recoveryCodes.use(customerId, s.person.id, fresh[1]), true, 'the set shown still works');
      assert.ok(await ssoSessions.current(customerId, cookie.value), 'still signed in');

      await s.page.getByRole('button', { name: 'Sign out everywhere' }).click();
      await s.page.getByRole('heading', { name: 'You are signed out everywhere' }).waitFor();
      assert.equal(await ssoCookie(s.page.context(), s), undefined, 'this browser\'s cookie is gone');
      assert.equal(await ssoSessions.current(customerId, cookie.value), undefined);
      assert.equal(await ssoSessions.current(customerId, other.value), undefined, 'the other browser\'s session has ended');
      const otherPage = await other.context.newPage();
      const there = await otherPage.goto(`${s.d.issuer}/account`);
      assert.equal(there?.status(), 401);
      await otherPage.getByRole('heading', { name: 'You are not signed in' }).waitFor();
      assert.equal(await otherPage.getByRole('button', { name: 'Generate new codes' }).count(), 0);
      assert.deepEqual(s.errors.filter((e) => /Content Security Policy/i.test(e)), []);
    });

    test('without a session the page shows no account and its POSTs do nothing; Sign out there ends this browser\'s session', async (t) => {
      const s = await setting(t, kind);
      const { recoveryCodes, ssoSessions } = s.d.composition.services;
      const customerId = s.d.customer.customerId;
      await recoveryCodes.generate(customerId, s.person.id);

      const shown = await s.page.goto(`${s.d.issuer}/account`);
      assert.equal(shown?.status(), 401);
      await s.page.getByRole('heading', { name: 'You are not signed in' }).waitFor();
      assert.doesNotMatch(await s.page.getByRole('main').innerText(), /ada|Lovelace|Recovery codes/i);
      for (const cookie of ['', `${SSO_COOKIE}=not-a-session`, `${SSO_COOKIE}=${'A'.repeat(43)}`]) {
        const posted = await fetch(`${s.d.issuer}/account/recovery-codes`, { method: 'POST', body: '', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' } });
        assert.equal(posted.status, 401, cookie);
      }
      assert.equal(await recoveryCodes.remaining(customerId, s.person.id), 10);
      assert.equal((await fetch(`${s.d.url}/customers/999999/account`)).status, 404);

      await signIn(s);
      const cookie = await ssoCookie(s.page.context(), s);
      assert.ok(cookie);
      await s.page.goto(`${s.d.issuer}/account`);
      await s.page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await s.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.equal(await ssoSessions.current(customerId, cookie.value), undefined);
      assert.equal(await ssoCookie(s.page.context(), s), undefined);
      assert.equal((await s.page.goto(`${s.d.issuer}/account`))?.status(), 401);
      assert.deepEqual(s.errors.filter((e) => /Content Security Policy/i.test(e)), []);
    });

    test('Change password: errors beside the fields; a change ends the other browser\'s session and keeps this one signed in with its factors', async (t) => {
      const s = await setting(t, kind);
      const { ssoSessions, users } = s.d.composition.services;
      const customerId = s.d.customer.customerId;
      await users.setPassword(customerId, s.person.id, 'old passphrase 1', { requireChange: false }, SYSTEM);
      await signIn(s);
      const before = await ssoCookie(s.page.context(), s);
      assert.ok(before);
      const other = await secondBrowser(t, s);
      await s.page.goto(`${s.d.issuer}/account`);
      const section = s.page.getByRole('region', { name: 'Change password' });

      await section.getByLabel('Current password').fill('not my password');
      await section.getByLabel('New password').fill('new passphrase 2');
      await section.getByRole('button', { name: 'Change password' }).click();
      await s.page.getByRole('alert').waitFor();
      assert.equal(await s.page.getByText('The current password is wrong.').count(), 1);
      assert.equal(await section.getByLabel('Current password').getAttribute('aria-invalid'), 'true');

      await section.getByLabel('Current password').fill('old passphrase 1');
      await section.getByLabel('New password').fill('short');
      await section.getByRole('button', { name: 'Change password' }).click();
      await s.page.getByRole('alert').waitFor();
      assert.equal(await section.getByLabel('New password').getAttribute('aria-invalid'), 'true');
      assert.match(await s.page.locator('#newPassword-error').innerText(), /^The new password /);
      assert.ok(await users.verifyCredentials(customerId, s.person.username, 'old passphrase 1'), 'nothing changed yet');
      assert.ok(await ssoSessions.current(customerId, other.value), 'the other browser is still signed in');

      await section.getByLabel('Current password').fill('old passphrase 1');
      await section.getByLabel('New password').fill('new passphrase 2');
      await section.getByRole('button', { name: 'Change password' }).click();
      await s.page.getByRole('status').waitFor();
      assert.match(await s.page.getByRole('status').innerText(), /Your password is changed/);
      assert.ok(await users.verifyCredentials(customerId, s.person.username, 'new passphrase 2'));
      assert.equal(await users.verifyCredentials(customerId, s.person.username, 'old passphrase 1'), undefined);
      assert.equal(await ssoSessions.current(customerId, other.value), undefined, 'the other browser\'s session has ended');
      assert.equal(await ssoSessions.current(customerId, before.value), undefined, 'the old value is gone');
      const after = await ssoCookie(s.page.context(), s);
      assert.ok(after && after.value !== before.value, 'this browser has a new session');
      assert.deepEqual((await ssoSessions.current(customerId, after.value))?.session.amr, ['email'], 'with the factors it had');
      const reload = await s.page.goto(`${s.d.issuer}/account`);
      assert.equal(reload?.status(), 200, 'still signed in here');
      assert.deepEqual(s.errors.filter((e) => /Content Security Policy/i.test(e)), []);
    });
  });
}
