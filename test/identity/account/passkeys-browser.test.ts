/**
 * The account page's sign-in factors in Chromium with a virtual authenticator, both stores: a passkey
 * added (named, listed with its dates), renamed and removed; each removal asks for the password or a
 * passkey first (the step-up, 5 minutes) and then says what it costs; an authenticator that does not
 * verify the user is refused; the authenticator app set up and removed, with the warning naming the
 * application whose policy then asks for a new one.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { STEP_UP_MS } from '../../../src/identity/account/step-up.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { describeEachStore, type StoreKind } from '../../helpers/stores.ts';
import type { TestUser } from '../sign-in/helpers.ts';
import {
  PASSWORD, addPasskey, deployOnLocalhost, jwtApplication, person, signInByLink, virtualAuthenticator, type LocalDeployment,
} from './passkey-helpers.ts';

after(closeBrowser);

interface Setting { d: LocalDeployment; page: Page; user: TestUser; errors: string[] }

async function signedInSetting(t: TestContext, kind: StoreKind): Promise<Setting> {
  const d = await deployOnLocalhost(t, kind);
  const user = await person(d);
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => { if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) errors.push(message.text()); });
  await signInByLink(page, d, user);
  await page.goto(`${d.issuer}/account`);
  await page.getByRole('heading', { name: 'Your account' }).waitFor();
  return { d, page, user, errors };
}

const holder = (s: Setting) => ({ customerId: s.d.customer.customerId, userId: s.user.id });
const passkeysSection = (s: Setting) => s.page.getByRole('region', { name: 'Passkeys' });
const item = (s: Setting, name: string) => passkeysSection(s).getByRole('listitem').filter({ hasText: name });

if (!findChromium()) {
  if (process.env.CI === 'true') test('account passkeys browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('account passkeys browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('the account page\'s passkeys and authenticator in a browser', (kind) => {
    test('Add a passkey names and lists it; Rename renames it; Remove asks for the password first, then removes it', async (t) => {
      const s = await signedInSetting(t, kind);
      const { passkeys } = s.d.composition.services;
      await virtualAuthenticator(s.page);
      assert.match(await passkeysSection(s).innerText(), /You have no passkeys\./);

      await addPasskey(s.page, 'Work laptop');
      assert.match(await item(s, 'Work laptop').innerText(), /Created \d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z, last used never/);
      const [stored] = await passkeys.list(holder(s));
      assert.equal(stored?.name, 'Work laptop');

      await item(s, 'Work laptop').getByRole('button', { name: 'Rename' }).click();
      await s.page.getByRole('heading', { name: 'Rename passkey Work laptop' }).waitFor();
      await s.page.getByLabel('Passkey name').fill('   ');
      await s.page.getByRole('button', { name: 'Rename' }).click();
      await s.page.getByRole('alert').waitFor();
      assert.equal((await passkeys.list(holder(s)))[0]?.name, 'Work laptop', 'a blank name changes nothing');
      await s.page.getByLabel('Passkey name').fill('Home laptop');
      await s.page.getByRole('button', { name: 'Rename' }).click();
      await s.page.getByRole('status').filter({ hasText: 'The passkey is renamed Home laptop.' }).waitFor();
      assert.equal(await item(s, 'Work laptop').count(), 0);
      await item(s, 'Home laptop').waitFor();

      await item(s, 'Home laptop').getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('heading', { name: 'Confirm it\'s you' }).waitFor();
      await s.page.getByLabel('Current password').fill('not the password');
      await s.page.getByRole('button', { name: 'Confirm' }).click();
      await s.page.getByRole('alert').filter({ hasText: 'The password is wrong.' }).waitFor();
      await s.page.getByLabel('Current password').fill(PASSWORD);
      await s.page.getByRole('button', { name: 'Confirm' }).click();
      await s.page.getByRole('heading', { name: 'Remove the passkey Home laptop?' }).waitFor();
      assert.match(await s.page.getByRole('main').innerText(), /nothing else changes/);
      assert.equal(await passkeys.count(holder(s)), 1, 'nothing is removed before the last button');
      await s.page.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('status').filter({ hasText: 'The passkey Home laptop is removed.' }).waitFor();
      assert.equal(await passkeys.count(holder(s)), 0);
      assert.match(await passkeysSection(s).innerText(), /You have no passkeys\./);
      assert.deepEqual(s.errors, []);
    });

    test('a removal without a fresh step-up is refused: a POST without one, and one 5 minutes old, ask again and remove nothing', async (t) => {
      const s = await signedInSetting(t, kind);
      const { passkeys } = s.d.composition.services;
      await virtualAuthenticator(s.page);
      await addPasskey(s.page, 'Phone');
      const [phone] = await passkeys.list(holder(s));
      assert.ok(phone);

      // The page's own POST, as a script on it would send it, without a step-up.
      const status = await s.page.evaluate(async (path) => (await fetch(path, { method: 'POST' })).status, `${s.d.issuerPath}/account/passkeys/${phone.passkeyId}/remove`);
      assert.equal(status, 403);
      assert.equal(await passkeys.count(holder(s)), 1);

      await item(s, 'Phone').getByRole('button', { name: 'Remove' }).click();
      await s.page.getByLabel('Current password').fill(PASSWORD);
      await s.page.getByRole('button', { name: 'Confirm' }).click();
      await s.page.getByRole('heading', { name: 'Remove the passkey Phone?' }).waitFor();
      s.d.clock.advance(STEP_UP_MS);
      await s.page.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('heading', { name: 'Confirm it\'s you' }).waitFor();
      assert.match(await s.page.getByRole('alert').first().innerText(), /more than 5 minutes ago/);
      assert.equal(await passkeys.count(holder(s)), 1, 'a stale step-up removes nothing');
    });

    test('the step-up with a passkey: Use a passkey (on another device), then the removal of the first', async (t) => {
      const s = await signedInSetting(t, kind);
      const { passkeys } = s.d.composition.services;
      const first = await virtualAuthenticator(s.page);
      await addPasskey(s.page, 'First');
      // A second device: one authenticator holds one passkey of the account (the first is excluded).
      await first.remove();
      await virtualAuthenticator(s.page);
      await addPasskey(s.page, 'Second');

      await item(s, 'First').getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('heading', { name: 'Confirm it\'s you' }).waitFor();
      await s.page.getByRole('button', { name: 'Use a passkey' }).click();
      await s.page.getByRole('heading', { name: 'Remove the passkey First?' }).waitFor();
      await s.page.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('status').filter({ hasText: 'The passkey First is removed.' }).waitFor();
      assert.deepEqual((await passkeys.list(holder(s))).map((p) => p.name), ['Second']);
      assert.match(await item(s, 'Second').innerText(), /last used \d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z/, 'the step-up used it');
      assert.deepEqual(s.errors, []);
    });

    test('an authenticator that does not verify the user adds no passkey', async (t) => {
      const s = await signedInSetting(t, kind);
      await virtualAuthenticator(s.page, { isUserVerified: false });
      const section = passkeysSection(s);
      await section.getByLabel('Passkey name').fill('Unverified');
      await section.getByRole('button', { name: 'Add a passkey' }).click();
      await section.getByRole('alert').filter({ hasText: /\S/ }).waitFor();
      assert.equal(await s.d.composition.services.passkeys.count(holder(s)), 0);
      await s.page.reload();
      assert.match(await passkeysSection(s).innerText(), /You have no passkeys\./);
    });

    test('Set up authenticator turns it on with its code; Remove asks for the password and warns that the application asking for it will ask again', async (t) => {
      const s = await signedInSetting(t, kind);
      const { mfa } = s.d.composition.services;
      const customerId = s.d.customer.customerId;
      await jwtApplication(s.d, 'Payroll', 'PASSWORD', 'AUTHENTICATOR_APP');
      const section = s.page.getByRole('region', { name: 'Authenticator app' });
      await section.getByRole('button', { name: 'Set up authenticator' }).click();
      await s.page.getByRole('heading', { name: 'Set up authenticator' }).waitFor();
      assert.ok(await s.page.getByRole('img', { name: 'QR code for your authenticator app' }).evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0), 'the QR code shows (CSP allows the data: image)');
      const secret = await s.page.locator('input[name=secret]').inputValue();
      await s.page.getByLabel('Authenticator code').fill(totpAt(secret, s.d.clock.now() - 120_000));
      await s.page.getByRole('button', { name: 'Turn on' }).click();
      await s.page.getByRole('alert').waitFor();
      assert.equal(await mfa.hasActiveAuthenticator(customerId, s.user.id), false, 'a wrong code turns nothing on');
      await s.page.getByLabel('Authenticator code').fill(totpAt(secret, s.d.clock.now()));
      await s.page.getByRole('button', { name: 'Turn on' }).click();
      await s.page.getByRole('status').filter({ hasText: 'Your authenticator app is set up.' }).waitFor();
      assert.equal(await mfa.hasActiveAuthenticator(customerId, s.user.id), true);

      await s.page.getByRole('region', { name: 'Authenticator app' }).getByRole('button', { name: 'Remove' }).click();
      await s.page.getByLabel('Current password').fill(PASSWORD);
      await s.page.getByRole('button', { name: 'Confirm' }).click();
      await s.page.getByRole('heading', { name: 'Remove your authenticator app?' }).waitFor();
      assert.match(await s.page.getByRole('alert').innerText(), /You will be asked to set up an authenticator app at your next sign-in to Payroll\./);
      assert.doesNotMatch(await s.page.getByRole('alert').innerText(), /Reports/, 'the application without a second factor is not named');
      await s.page.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('status').filter({ hasText: 'Your authenticator app is removed.' }).waitFor();
      assert.equal(await mfa.hasActiveAuthenticator(customerId, s.user.id), false);
      await s.page.getByRole('region', { name: 'Authenticator app' }).getByRole('button', { name: 'Set up authenticator' }).waitFor();
      assert.deepEqual(s.errors, []);
    });
  });
}
