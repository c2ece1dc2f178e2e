/**
 * The console owner's passkey (Chromium, virtual authenticator, both stores): added on the console's
 * account page (`Passkey name`, listed with its dates), it signs the owner in (`Sign in with a passkey`:
 * the e-mail, then `Use a passkey`) with no password or code; removed, it signs in no more. An
 * authenticator that does not verify the user adds nothing.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { createConsoleAccounts } from '../../src/compose/identity.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { build } from '../helpers/app.ts';
import { freePort } from '../helpers/ports.ts';
import { describeEachStore, type StoreKind } from '../helpers/stores.ts';
import { virtualAuthenticator } from '../identity/account/passkey-helpers.ts';
import { NO_BROWSER, OWNER_PASSWORD, browser, closeBrowser, findChromium, signIn, type ConsoleServer } from './browser.ts';

after(closeBrowser);

/** Latchkey at http://localhost:<port> (WebAuthn refuses an IP address), the owner's console password set. */
async function localConsole(t: TestContext, kind: StoreKind): Promise<ConsoleServer> {
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const app = await build(t, kind, { LATCHKEY_PUBLIC_URL: url });
  await app.identity.listen({ port, host: '127.0.0.1' });
  const { owners } = createConsoleAccounts({ db: app.composition.store.db, clock: app.clock, sealer: createSealer(app.composition.masterKey) });
  const { email } = await owners.setPassword(app.customer.customerKey, OWNER_PASSWORD);
  return { ...app, url, email, password: OWNER_PASSWORD };
}

async function passkeySignIn(page: Page, server: ConsoleServer, email = server.email): Promise<void> {
  await page.goto(`${server.url}/console/sign-in`);
  await page.getByRole('link', { name: 'Sign in with a passkey' }).click();
  await page.getByLabel('E-mail').fill(email);
  await page.getByRole('button', { name: 'Use a passkey' }).click();
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('console owner passkey tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console owner passkey tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('the console owner\'s passkey', (kind) => {
    test('added on the account page, it signs the owner in; removed, it signs in no more', async (t) => {
      const server = await localConsole(t, kind);
      const page = await (await browser(t)).newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      await virtualAuthenticator(page);
      const holder = { customerId: server.customer.customerId, userId: null };
      const { passkeys } = server.composition.services;

      await passkeySignIn(page, server);
      await page.getByRole('alert').filter({ hasText: 'No passkey is registered for this e-mail.' }).waitFor();

      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByLabel('Passkey name').fill('Owner laptop');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByText('Passkey added: you may sign in with it.').waitFor();
      const listed = page.getByRole('listitem').filter({ hasText: 'Owner laptop' });
      assert.match(await listed.innerText(), /created \d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z, last used never/);
      assert.equal(await passkeys.count(holder), 1);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('You are signed out.').waitFor();
      await passkeySignIn(page, server);
      await page.waitForURL(`${server.url}/console/account`);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      assert.match(await page.getByRole('listitem').filter({ hasText: 'Owner laptop' }).innerText(), /last used \d{4}-/);

      await page.getByRole('listitem').filter({ hasText: 'Owner laptop' }).getByRole('button', { name: 'Remove' }).click();
      await page.getByText('Passkey removed.').waitFor();
      assert.equal(await passkeys.count(holder), 0);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('You are signed out.').waitFor();
      await passkeySignIn(page, server);
      await page.getByRole('alert').filter({ hasText: 'No passkey is registered for this e-mail.' }).waitFor();
      assert.ok(page.url().endsWith('/console/sign-in/passkey'), 'still signed out');
      assert.deepEqual(errors, []);
    });

    test('an authenticator that does not verify the user adds no passkey', async (t) => {
      const server = await localConsole(t, kind);
      const page = await (await browser(t)).newPage();
      await virtualAuthenticator(page, { isUserVerified: false });
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByLabel('Passkey name').fill('Unverified');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: /\S/ }).waitFor();
      assert.equal(await server.composition.services.passkeys.count({ customerId: server.customer.customerId, userId: null }), 0);
    });
  });
}
