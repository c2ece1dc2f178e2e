/**
 * Passkeys at the hosted sign-in, in Chromium with a virtual authenticator: enrolled at the sign-in's
 * enrolment step, then the second factor after a password, then a username-less first factor; refused
 * when the authenticator does not verify the user, once removed, and for a disabled user.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type { Page } from 'playwright-core';
import { describeEachStore } from '../../helpers/stores.ts';
import { NO_BROWSER, closeBrowser, findChromium } from '../../console/browser.ts';
import { PASSWORD, createUser, signInWithPassword } from '../sign-in/helpers.ts';
import { createPasskeyApplication, deployOnLocalhost, pageWithAuthenticator, simulatePresence, storedCredentials } from './helpers.ts';

after(async () => { await closeBrowser(); });

async function idTokenAt(page: Page, returnUrl: string) {
  await page.waitForURL((url) => url.href.startsWith(returnUrl)).catch(async (error: Error) => {
    throw new Error(`${error.message}\nat ${page.url()}: ${(await page.locator('main').textContent().catch(() => ''))?.slice(0, 300)}`);
  });
  const token = new URL(page.url()).searchParams.get('id_token');
  assert.ok(token, `no id_token in ${page.url()}`);
  return decodeJwt(token);
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('passkey sign-in browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('passkey sign-in browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('passkeys at the hosted sign-in', (kind) => {
    test('enrolled at the enrolment step after a password, then the second factor after a password, then username-less by autofill and by the button; amr hwk', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const twoFactor = await createPasskeyApplication(d, returnUrl, 'PASSWORD', 'PASSKEY', 'Portal');
      const passkeyOnly = await createPasskeyApplication(d, returnUrl, 'PASSKEY', 'NONE', 'Wiki');
      const user = await createUser(d);
      const a = await pageWithAuthenticator(t);
      const { page } = a;

      await page.goto(twoFactor.authorize);
      await signInWithPassword(page, user.username);
      await page.getByLabel('Passkey name').fill('Work laptop');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByRole('button', { name: 'Continue' }).waitFor();
      assert.equal(await page.locator('ul.codes li').count(), 10);
      await page.getByRole('button', { name: 'Continue' }).click();
      const enrolled = await idTokenAt(page, returnUrl);
      assert.deepEqual([enrolled.sub, enrolled.amr], [String(user.id), ['pwd', 'hwk']]);
      const holder = { customerId: d.customer.customerId, userId: user.id };
      const [passkey] = await d.composition.services.passkeys.list(holder);
      assert.equal(passkey?.name, 'Work laptop');
      assert.equal((await storedCredentials(a)).length, 1, 'one discoverable credential on the authenticator');

      // Signed out (cookies gone, the authenticator kept): the password, then `Use a passkey`.
      await page.context().clearCookies();
      await simulatePresence(a, false);
      await page.goto(twoFactor.authorize);
      await page.getByLabel('Username or e-mail').fill(user.username);
      await page.getByRole('button', { name: 'Continue' }).click();
      await simulatePresence(a, true);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Use a passkey' }).click();
      const second = await idTokenAt(page, returnUrl);
      assert.deepEqual([second.sub, second.amr], [String(user.id), ['pwd', 'hwk']]);
      const [used] = await d.composition.services.passkeys.list(holder);
      assert.equal(used?.lastUsedAt, d.clock.now());

      // Username-less through autofill: the page asks for a passkey (conditional mediation) as it loads;
      // the virtual authenticator picks it as a person would from the username field's suggestions.
      await page.context().clearCookies();
      await page.goto(passkeyOnly.authorize);
      const autofilled = await idTokenAt(page, returnUrl);
      assert.deepEqual([autofilled.sub, autofilled.amr], [String(user.id), ['hwk']]);

      // And with the button, in a browser without passkey autofill (the credential moved to its authenticator).
      const other = await pageWithAuthenticator(t, { noAutofill: true });
      const [credential] = (await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.authenticatorId })).credentials;
      await other.cdp.send('WebAuthn.addCredential', { authenticatorId: other.authenticatorId, credential: credential! });
      await other.page.goto(passkeyOnly.authorize);
      await other.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      const first = await idTokenAt(other.page, returnUrl);
      assert.deepEqual([first.sub, first.amr], [String(user.id), ['hwk']]);
      assert.deepEqual(a.errors.filter((e) => !/status of 4\d\d/.test(e)), []);
    });

    test("a PASSKEY first factor after typing the username; another customer's sign-in, a removed passkey, or a disabled user: refused", async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const enrolApp = await createPasskeyApplication(d, returnUrl, 'PASSWORD', 'PASSKEY', 'Portal');
      const passkeyOnly = await createPasskeyApplication(d, returnUrl, 'PASSKEY', 'NONE', 'Wiki');
      const user = await createUser(d);
      // Only the button here (autofill has its own test): with presence simulated, an autofill request on the
      // same page would be answered by itself, and a late one could sign in after the refusals below.
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      const { page } = a;
      await page.goto(enrolApp.authorize);
      await signInWithPassword(page, user.username);
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
      await idTokenAt(page, returnUrl);
      const holder = { customerId: d.customer.customerId, userId: user.id };
      const [passkey] = await d.composition.services.passkeys.list(holder);
      assert.match(passkey!.name, /^Chrome on Linux, \d{4}-\d{2}-\d{2}$/, 'the default name: the browser and the day');

      await page.context().clearCookies();
      await simulatePresence(a, false);
      await page.goto(passkeyOnly.authorize);
      await page.getByLabel('Username or e-mail').fill(user.username);
      await page.getByRole('button', { name: 'Continue' }).click();
      await simulatePresence(a, true);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      assert.deepEqual((await idTokenAt(page, returnUrl)).amr, ['hwk']);

      // Another customer's sign-in, same browser and passkey: refused there.
      const other = await d.newCustomer();
      const otherKey = Number(other.customer.customerKey);
      const otherApp = await other.admin.post('/admin/applications/create', { customerKey: otherKey, type: 'JWT', returnUrls: [returnUrl], name: 'Elsewhere' });
      const otherUuid = (otherApp.json() as { application: { applicationUuid: string } }).application.applicationUuid;
      const otherPolicy = await other.admin.post('/admin/policies/create', { customerKey: otherKey, applicationUuid: otherUuid, firstFactor: 'PASSKEY', secondFactor: 'NONE' });
      assert.equal(otherPolicy.statusCode, 200, otherPolicy.body);
      await page.context().clearCookies();
      await page.goto(`${d.url}/customers/${other.customer.customerKey}/jwt/authorize?client_id=${otherUuid}&redirect_uri=${encodeURIComponent(returnUrl)}`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted.' }).waitFor();
      assert.ok(!page.url().startsWith(returnUrl));

      // Disabled: the same refusal as any other.
      await page.context().clearCookies();
      const customerKey = Number(d.customer.customerKey);
      assert.equal((await d.admin.post('/admin/users/disable', { customerKey, username: user.username })).statusCode, 200);
      await page.goto(passkeyOnly.authorize);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted.' }).waitFor();
      assert.equal((await d.admin.post('/admin/users/enable', { customerKey, username: user.username })).statusCode, 200);

      // Removed by the admin API: the authenticator still offers it, the server refuses it.
      const removed = await d.admin.post('/admin/users/passkeys/delete', { customerKey, username: user.username, passkeyId: passkey!.passkeyId });
      assert.equal(removed.statusCode, 200, removed.body);
      await page.reload();
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted.' }).waitFor();
      assert.ok(!page.url().startsWith(returnUrl));
    });

    test('an authenticator that does not verify the user cannot enrol a passkey where verification is required', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const enrolApp = await createPasskeyApplication(d, returnUrl, 'PASSWORD', 'PASSKEY', 'Portal');
      const user = await createUser(d);
      const { page } = await pageWithAuthenticator(t, { isUserVerified: false });
      await page.goto(enrolApp.authorize);
      await signInWithPassword(page, user.username);
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: /passkey/ }).waitFor();
      assert.equal(await d.composition.services.passkeys.count({ customerId: d.customer.customerId, userId: user.id }), 0);
      assert.ok(!page.url().startsWith(returnUrl));
    });
  });
}
