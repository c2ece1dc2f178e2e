/**
 * A passkey added on the account page, used where people sign in (Chromium, virtual authenticator,
 * both stores): username-less at the hosted sign-in after signing out; as the second factor at the
 * magic-link landing (PASSKEY, a recovery code in its place, and ANY offering both ways); removed on the account page (with the
 * warning that the passkey-only application can no longer be entered), after which it signs in nowhere.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import { decodeJwt } from 'jose';
import type { Page } from 'playwright-core';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { describeEachStore, type StoreKind } from '../../helpers/stores.ts';
import { enrolAuthenticator, type TestUser } from '../sign-in/helpers.ts';
import { inviteLink } from '../sign-out/deployment.ts';
import {
  PASSWORD, addPasskey, newestLink, deployOnLocalhost, jwtApplication, person, signInByLink, virtualAuthenticator, type LocalDeployment,
} from './passkey-helpers.ts';

after(closeBrowser);

interface Setting { d: LocalDeployment; page: Page; user: TestUser }

/** Signed in (an INVITE link), a passkey `Laptop` added on the account page. */
async function withPasskey(t: TestContext, kind: StoreKind): Promise<Setting> {
  const d = await deployOnLocalhost(t, kind);
  const user = await person(d);
  const page = await (await browser(t)).newPage();
  await signInByLink(page, d, user);
  await virtualAuthenticator(page);
  await page.goto(`${d.issuer}/account`);
  await addPasskey(page, 'Laptop');
  return { d, page, user };
}

const authorize = (d: LocalDeployment, application: { uuid: string; returnUrl: string }) =>
  `${d.issuer}/jwt/authorize?client_id=${application.uuid}&redirect_uri=${encodeURIComponent(application.returnUrl)}`;

/** The id_token's amr of the page's current URL (a JWT application's return URL). */
function amrOf(page: Page): string[] {
  const token = new URL(page.url()).searchParams.get('id_token');
  assert.ok(token, page.url());
  return decodeJwt(token).amr as string[];
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('passkey sign-in browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('passkey sign-in browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('a passkey from the account page, signing in', (kind) => {
    test('signed out, it signs in username-less; removed (the warning names the passkey-only application), it signs in no more', async (t) => {
      const s = await withPasskey(t, kind);
      const vault = await jwtApplication(s.d, 'Vault', 'PASSKEY');
      await s.page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await s.page.getByRole('heading', { name: 'You are signed out' }).waitFor();

      // Username-less, by the button: the browser's autofill is turned off here, as the virtual
      // authenticator would otherwise answer its request unasked and race the button.
      await s.page.addInitScript(() => { PublicKeyCredential.isConditionalMediationAvailable = async () => false; });
      await s.page.goto(authorize(s.d, vault));
      await s.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(`${vault.returnUrl}?id_token=`));
      assert.ok(amrOf(s.page).includes('hwk'));
      assert.equal(decodeJwt(new URL(s.page.url()).searchParams.get('id_token')!).sub !== undefined, true);

      await s.page.goto(`${s.d.issuer}/account`);
      const laptop = s.page.getByRole('region', { name: 'Passkeys' }).getByRole('listitem').filter({ hasText: 'Laptop' });
      assert.match(await laptop.innerText(), /last used \d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z/);
      await laptop.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByLabel('Current password').fill(PASSWORD);
      await s.page.getByRole('button', { name: 'Confirm' }).click();
      await s.page.getByRole('heading', { name: 'Remove the passkey Laptop?' }).waitFor();
      assert.match(await s.page.getByRole('alert').innerText(), /You will not be able to sign in to Vault: it signs in with a passkey, and you will have none\./);
      await s.page.getByRole('button', { name: 'Remove' }).click();
      await s.page.getByRole('status').filter({ hasText: 'The passkey Laptop is removed.' }).waitFor();

      await s.page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await s.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      await s.page.goto(authorize(s.d, vault));
      // The authenticator still holds the credential; the server no longer knows it.
      await s.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await s.page.getByRole('alert').filter({ hasText: /\S/ }).waitFor();
      assert.ok(!s.page.url().startsWith(vault.returnUrl), 'not signed in');
    });

    test('at the magic-link landing: PASSKEY asks for it (Use a passkey), ANY offers the code and the passkey; a user without one is refused before the link is used', async (t) => {
      const s = await withPasskey(t, kind);
      const ledger = await jwtApplication(s.d, 'Ledger', 'MAGIC_LINK', 'PASSKEY');
      const d = { ...s.d, issuerPath: s.d.issuerPath };

      await s.page.goto(await inviteLink(d, s.user.username, s.user.email, ledger.uuid, ledger.returnUrl));
      await s.page.getByRole('button', { name: 'Continue to Ledger' }).click();
      await s.page.getByRole('heading', { name: 'Use your passkey' }).waitFor();
      await s.page.getByRole('link', { name: 'Use a recovery code' }).waitFor();
      await s.page.getByRole('button', { name: 'Use a passkey' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(`${ledger.returnUrl}?id_token=`));
      assert.deepEqual(amrOf(s.page), ['email', 'hwk']);

      // A recovery code stands in for the passkey: it shows the factor the policy asks for.
      const [code] = await s.d.composition.services.recoveryCodes.generate(s.d.customer.customerId, s.user.id);
      await s.page.goto(await inviteLink(d, s.user.username, s.user.email, ledger.uuid, ledger.returnUrl));
      await s.page.getByRole('button', { name: 'Continue to Ledger' }).click();
      await s.page.getByRole('link', { name: 'Use a recovery code' }).click();
      await s.page.getByLabel('Recovery code').fill(code!);
      await s.page.getByRole('button', { name: 'Verify' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(`${ledger.returnUrl}?id_token=`));
      assert.deepEqual(amrOf(s.page), ['email', 'hwk']);

      // ANY, for a user with an authenticator app and a passkey: both ways on the step.
      await enrolAuthenticator(s.d, s.user);
      const books = await jwtApplication(s.d, 'Books', 'MAGIC_LINK', 'ANY');
      await s.page.goto(await inviteLink(d, s.user.username, s.user.email, books.uuid, books.returnUrl));
      await s.page.getByRole('button', { name: 'Continue to Books' }).click();
      await s.page.getByRole('heading', { name: 'Enter your authenticator code' }).waitFor();
      await s.page.getByLabel('Authenticator code').waitFor();
      await s.page.getByRole('button', { name: 'Use a passkey' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(`${books.returnUrl}?id_token=`));
      assert.deepEqual(amrOf(s.page), ['email', 'hwk']);

      // Another user, no passkey: the PASSKEY policy refuses the link, which stays unused.
      const other = await person(s.d);
      const link = await newestLink(d, other, ledger.uuid, ledger.returnUrl);
      const shown = await s.page.goto(link);
      assert.equal(shown?.status(), 403);
      await s.page.getByRole('heading', { name: 'A passkey is required' }).waitFor();
    });
  });
}
