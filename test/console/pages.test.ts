/**
 * The console's other pages in a real browser: an application and its login policy, a magic link
 * generated and revoked from the user's page, groups (create, attributes, members), OAuth clients
 * (the secret shown once) and the Site page (credential methods, API keys). With
 * LATCHKEY_CONSOLE_SCREENSHOTS=1 the main pages are saved to docs/console/*.png on the way.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, createUserInConsole, signIn } from './browser.ts';
import { ROOT } from '../helpers/paths.ts';

after(closeBrowser);

const SHOTS = process.env.LATCHKEY_CONSOLE_SCREENSHOTS === '1' ? join(ROOT, 'docs/console/') : undefined;
async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1100, height: 760 });
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('console page tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console page tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console pages', (kind) => {
    test('an application and its login policy, then a magic link for a user, generated and revoked', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await page.goto(`${server.url}/console`);
      await shot(page, 'sign-in');
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await shot(page, 'account');

      await page.getByRole('link', { name: 'Applications', exact: true }).click();
      await page.getByLabel('Application name').fill('Portal');
      await page.getByLabel('Type').selectOption('OAUTH');
      await page.getByLabel('Return or redirect URLs').fill('https://portal.example.test/callback');
      await page.getByLabel('Login URLs (OAUTH)').fill('https://portal.example.test/login');
      await page.getByRole('button', { name: 'Create application' }).click();
      const secret = await page.locator('#client-secret').innerText();
      assert.ok(secret.length >= 32);
      await page.goto(`${server.url}/console/applications`);
      assert.equal(await page.locator('#client-secret').count(), 0, 'the client secret is shown once');
      await page.getByRole('link', { name: 'Portal', exact: true }).click();
      assert.equal(await page.locator('#client-secret').count(), 0, 'the client secret is shown once');
      await page.getByLabel('First factor').selectOption('MAGIC_LINK');
      await page.getByRole('button', { name: 'Create policy' }).click();
      await page.getByText('Login policy created.').waitFor();
      await page.getByRole('cell', { name: 'Magic link' }).waitFor();
      await shot(page, 'applications');

      await createUserInConsole(page, 'bob', 'bob password 12');
      await page.getByRole('link', { name: 'Magic links' }).click();
      await page.getByRole('button', { name: 'Generate magic link' }).click();
      await page.getByText('Magic link generated').waitFor();
      await shot(page, 'user');
      const db = server.composition.store.db;
      const links = () => db.selectFrom('magic_links').innerJoin('users', 'users.id', 'magic_links.user_id')
        .select(['magic_links.revoked_at', 'magic_links.consumed_at']).where('users.username', '=', 'bob').execute();
      const [link] = await links();
      assert.deepEqual(link, { revoked_at: null, consumed_at: null });
      await page.getByRole('button', { name: 'Revoke magic links' }).click();
      await page.getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByText('Open magic links revoked.').waitFor();
      assert.notEqual((await links())[0]!.revoked_at, null);

      await page.getByRole('link', { name: 'Users', exact: true }).click();
      await shot(page, 'users');
    });

    test('groups: create, set attributes, add and remove a member; the user page changes groups', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      const customerId = (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
      await server.composition.services.users.create(customerId, { username: 'carol', email: 'carol@example.test', firstName: 'Carol', lastName: 'C', customAttributes: {} }, SYSTEM);
      await page.getByRole('link', { name: 'Groups', exact: true }).click();
      await page.getByLabel('Group name').fill('Editors');
      await page.getByRole('button', { name: 'Create group' }).click();
      await page.getByRole('heading', { name: 'Editors' }).waitFor();
      await page.getByLabel('Group attributes').fill('groupAttribute1=blue');
      await page.getByRole('button', { name: 'Update attributes' }).click();
      await page.getByText('Attributes saved.').waitFor();
      assert.equal(await page.getByLabel('Group attributes').inputValue(), 'groupAttribute1=blue');
      await page.getByRole('searchbox', { name: 'Search users' }).fill('carol@example.test');
      await page.getByRole('button', { name: 'Add', exact: true }).click();
      await page.getByText('Member added.').waitFor();
      await page.getByRole('link', { name: 'carol' }).waitFor();
      await shot(page, 'group');
      await page.getByRole('button', { name: 'Remove carol' }).click();
      await page.getByRole('heading', { name: 'Remove carol from Editors?' }).waitFor();
      await page.getByRole('button', { name: 'Remove', exact: true }).click();
      await page.getByText('Member removed.').waitFor();

      await page.getByRole('link', { name: 'Users', exact: true }).click();
      await page.getByRole('link', { name: 'carol' }).click();
      await page.getByRole('link', { name: 'Group memberships' }).click();
      await page.getByLabel('Editors').check();
      await page.getByRole('button', { name: 'Save groups' }).click();
      await page.getByText('Groups saved.').waitFor();
      await page.getByRole('link', { name: 'Details' }).click();
      assert.deepEqual((await server.composition.services.users.getWithGroups(customerId, 'carol')).groups.sort(), ['DEFAULT', 'Editors']);
      await page.getByLabel('First name').fill('Caroline');
      await page.getByLabel('Custom attributes').fill('customAttribute2=x');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Changes saved.').waitFor();
      const carol = await server.composition.services.users.getWithGroups(customerId, 'carol');
      assert.equal(carol.firstName, 'Caroline');
      assert.deepEqual(carol.customAttributes, { customAttribute2: 'x' });
    });

    test('OAuth clients and the Site page: a client secret shown once, credential methods, an API key', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('link', { name: 'OAuth clients', exact: true }).click();
      await page.getByLabel('Client name').fill('Back office');
      await page.getByRole('button', { name: 'Create OAuth client' }).click();
      const clientId = await page.locator('#client-id').innerText();
      const clientSecret = await page.locator('#client-secret').innerText();
      assert.ok(await server.composition.services.oauthClients.verifyClientSecret(clientId, clientSecret));

      // The content site serves one customer; on the shared PostgreSQL schema other customers exist,
      // so this test binds the site to its own (only that customer may change site-wide settings).
      await server.composition.store.db.deleteFrom('site_settings').where('name', '=', 'boundCustomerKey').execute();
      await server.composition.services.siteSettings.bindCustomer(server.customer.customerKey);
      await page.getByRole('link', { name: 'Site', exact: true }).click();
      // A setting that waits for a restart says so where it is saved, and again once saved.
      assert.match(await page.locator('#site-settings-restart').innerText(), /applies after a restart/);
      await page.getByLabel('API tokens').uncheck();
      await page.getByRole('button', { name: 'Save site settings' }).click();
      await page.getByText('Site settings saved. They apply when the server restarts.').waitFor();
      assert.equal(await page.getByLabel('API tokens').isChecked(), false);
      await page.getByLabel('Key name').fill('reader');
      await page.getByRole('button', { name: 'Create API key' }).click();
      assert.ok((await page.locator('#site-api-key').innerText()).length > 20);
      await page.getByRole('button', { name: 'Revoke reader' }).click();
      await page.getByText('API key revoked.').waitFor();
      await shot(page, 'site');
    });
  });
}
