/**
 * The Applications pages in a real browser, through the names DESIGN.md fixes: each application a
 * link to its page; Edit (Name and its type's URL lists, one URL a line) saved; every problem shown at
 * once beside its field with what was typed kept; a login policy whose group is picked from the
 * customer's groups, factors in words; deletes asked first, a reload repeating nothing. One server
 * and one browser per store.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console applications pages', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console applications pages', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console applications pages', (kind) => test('applications: create, edit, policies, delete', async (t) => {
    const server = await consoleServer(t, kind);
    const customerId = server.customer.customerId;
    const { applications, policies, groups } = server.composition.services;
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    const root = `${server.url}/console`;
    const shop = (await applications.create(customerId, { name: 'Shop', type: 'JWT', returnUrls: ['https://shop.example.test/back'] }, SYSTEM)).application;
    await groups.upsert(customerId, [{ name: 'staff', isDefault: false, attributes: {} }], SYSTEM);

    await t.test('create: each problem beside its field, what was typed kept; then the new application page', async () => {
      await page.getByRole('link', { name: 'Applications', exact: true }).click();
      await page.getByText('1 application.').waitFor();
      await page.getByLabel('Application name').fill('Blog');
      await page.getByLabel('Type').selectOption({ label: 'JWT' });
      await page.getByLabel('Return or redirect URLs').fill('ftp://blog.example.test/back');
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByRole('alert').filter({ hasText: 'Return URLs: ftp://blog.example.test/back must start with https:// or http://' }).waitFor();
      assert.equal(await page.getByLabel('Type').inputValue(), 'JWT');
      assert.equal(await page.getByLabel('Application name').inputValue(), 'Blog');
      assert.equal(await page.getByLabel('Return or redirect URLs').inputValue(), 'ftp://blog.example.test/back');
      assert.equal(await page.locator('#app-urls-error').innerText(), 'Return URLs: ftp://blog.example.test/back must start with https:// or http://');
      assert.equal((await applications.list(customerId)).length, 1, 'nothing stored');

      // Every problem at once: login URLs and post-logout redirect URIs are an OAUTH application's only.
      await page.getByLabel('Login URLs (OAUTH)').fill('https://blog.example.test/login');
      await page.getByLabel('Post-logout redirect URIs (OAUTH)').fill('https://blog.example.test/bye');
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByRole('alert').filter({ hasText: '3 problems' }).waitFor();
      assert.equal(await page.locator('#app-login-urls-error').innerText(), 'Login URLs is only for OAUTH applications');
      assert.equal(await page.locator('#app-logout-urls-error').innerText(), 'Post-logout redirect URIs is only for OAUTH applications');
      assert.equal(await page.getByLabel('Login URLs (OAUTH)').inputValue(), 'https://blog.example.test/login');
      assert.equal(await page.getByLabel('Post-logout redirect URIs (OAUTH)').inputValue(), 'https://blog.example.test/bye');

      await page.getByLabel('Login URLs (OAUTH)').fill('');
      await page.getByLabel('Post-logout redirect URIs (OAUTH)').fill('');
      await page.getByLabel('Return or redirect URLs').fill('https://blog.example.test/back');
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByText('Application created.').waitFor();
      await page.getByRole('heading', { name: 'Blog', level: 1 }).waitFor();
    });

    await t.test('edit: Name and Return URLs saved; every problem at once, beside its field, typed values kept', async () => {
      await page.getByRole('link', { name: 'Applications', exact: true }).click();
      await page.getByRole('link', { name: 'Shop', exact: true }).click();
      await page.getByRole('heading', { name: 'Shop', level: 1 }).waitFor();
      const edit = page.getByRole('form', { name: 'Edit' });
      assert.equal(await edit.getByLabel('Return URLs').inputValue(), 'https://shop.example.test/back');
      assert.equal(await page.getByLabel(/^Redirect URIs/).count(), 0, 'a JWT application has no redirect URIs');
      assert.equal(await page.getByLabel('Post-logout redirect URIs').count(), 0, 'nor post-logout ones');

      // As a hand-made POST would: no browser checks.
      await page.locator('form[aria-labelledby="edit-heading"]').evaluate((form) => { (form as HTMLFormElement).noValidate = true; });
      await edit.getByLabel('Name').fill('');
      await edit.getByLabel('Return URLs').fill('https://shop.example.test/ok\nnot a url');
      await edit.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('alert').filter({ hasText: '2 problems' }).waitFor();
      assert.equal(await page.locator('#name-error').innerText(), 'Name is required');
      assert.equal(await page.locator('#returnUrls-error').innerText(), 'Return URLs: not a url must start with https:// or http://');
      assert.equal(await page.getByLabel('Return URLs').inputValue(), 'https://shop.example.test/ok\nnot a url');
      assert.equal(await page.getByLabel('Name').getAttribute('aria-invalid'), 'true');
      assert.equal((await applications.get(customerId, shop.uuid)).name, 'Shop', 'nothing stored');

      await page.getByLabel('Name').fill('Shop 2');
      await page.getByLabel('Return URLs').fill('https://shop.example.test/back\n\n  https://shop.example.test/other  \n');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Changes saved.').waitFor();
      await page.getByRole('heading', { name: 'Shop 2', level: 1 }).waitFor();
      const saved = await applications.get(customerId, shop.uuid);
      assert.equal(saved.name, 'Shop 2');
      assert.deepEqual(saved.returnUrls, ['https://shop.example.test/back', 'https://shop.example.test/other']);
      assert.equal(await page.getByLabel('Return URLs').inputValue(), 'https://shop.example.test/back\nhttps://shop.example.test/other');
    });

    await t.test('an OAUTH application edits its redirect URIs, login URLs and post-logout redirect URIs; a SAML one has its SP settings instead of lists', async () => {
      const portal = (await applications.create(customerId, { name: 'Portal', type: 'OAUTH', redirectUris: ['https://portal.example.test/cb'] }, SYSTEM)).application;
      const idp = (await applications.create(customerId, { name: 'Intranet', type: 'SAML', entityId: 'urn:example:intranet', acsUrls: ['https://intranet.example.test/acs'] }, SYSTEM)).application;
      await page.goto(`${root}/applications/${portal.uuid}`);
      await page.getByText('OAuth (OpenID Connect)').waitFor();
      await page.getByLabel(/^Redirect URIs/).fill('https://portal.example.test/cb2');
      await page.getByLabel('Login URLs').fill('https://portal.example.test/login');
      // A bad one is refused beside its field, with what was typed kept.
      await page.getByLabel('Post-logout redirect URIs').fill('https://portal.example.test/bye\nhttps://portal.example.test/#x');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('#postLogoutRedirectUris-error').filter({ hasText: 'Post-logout redirect URIs: https://portal.example.test/#x must not contain a fragment (#)' }).waitFor();
      assert.deepEqual((await applications.get(customerId, portal.uuid)).postLogoutRedirectUris, [], 'nothing was saved');
      await page.getByLabel('Post-logout redirect URIs').fill('https://portal.example.test/bye\n\n  https://portal.example.test/signed-out  ');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Changes saved.').waitFor();
      const saved = await applications.get(customerId, portal.uuid);
      assert.deepEqual([saved.redirectUris, saved.loginUrls], [['https://portal.example.test/cb2'], ['https://portal.example.test/login']]);
      assert.deepEqual(saved.postLogoutRedirectUris, ['https://portal.example.test/bye', 'https://portal.example.test/signed-out']);
      assert.equal(await page.getByLabel('Post-logout redirect URIs').inputValue(), 'https://portal.example.test/bye\nhttps://portal.example.test/signed-out');
      assert.equal(saved.clientSecretHash, portal.clientSecretHash, 'the client secret stays');
      await page.goto(`${root}/applications/${idp.uuid}`);
      assert.equal(await page.getByLabel('Entity ID').inputValue(), 'urn:example:intranet');
      assert.equal(await page.getByLabel('Return URLs').count(), 0);
    });

    await t.test('a login policy: the group picked from the groups, factors in words; a second one for the group is refused beside it', async () => {
      await page.goto(`${root}/applications/${shop.uuid}`);
      const groupOptions = await page.getByLabel('Group', { exact: true }).locator('option').allInnerTexts();
      assert.deepEqual(groupOptions, ['Everyone else (application-wide)', 'DEFAULT', 'staff']);
      await page.getByLabel('Group', { exact: true }).selectOption('staff');
      await page.getByLabel('First factor').selectOption({ label: 'Password' });
      await page.getByLabel('Second factor').selectOption({ label: 'Authenticator app' });
      await page.getByRole('button', { name: 'Create policy' }).click();
      await page.getByText('Login policy created.').waitFor();
      const row = page.getByRole('row').filter({ hasText: 'staff' });
      await row.getByRole('cell', { name: 'Password', exact: true }).waitFor();
      await row.getByRole('cell', { name: 'Authenticator app', exact: true }).waitFor();
      const [policy] = await policies.list(customerId);
      assert.deepEqual([policy?.groupName, policy?.firstFactor, policy?.secondFactor], ['staff', 'PASSWORD', 'AUTHENTICATOR_APP']);

      await page.getByLabel('Group', { exact: true }).selectOption('staff');
      await page.getByLabel('First factor').selectOption({ label: 'Magic link' });
      await page.getByRole('button', { name: 'Create policy' }).click();
      await page.locator('#policy-group-error').filter({ hasText: 'already has a policy for group staff' }).waitFor();
      assert.equal(await page.getByLabel('Group', { exact: true }).inputValue(), 'staff');
      assert.equal(await page.getByLabel('First factor').inputValue(), 'MAGIC_LINK');
      assert.equal((await policies.list(customerId)).length, 1);

      await page.getByRole('button', { name: 'Delete policy for staff' }).click();
      await page.getByRole('heading', { name: 'Delete the login policy for staff?' }).waitFor();
      assert.equal((await policies.list(customerId)).length, 1, 'nothing is deleted before confirming');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByText('Login policy deleted.').waitFor();
      assert.equal((await policies.list(customerId)).length, 0);
    });

    await t.test('delete asks first; a reload of the result repeats nothing', async () => {
      await page.goto(`${root}/applications/${shop.uuid}`);
      await page.getByRole('button', { name: 'Delete application' }).click();
      await page.getByRole('heading', { name: 'Delete Shop 2?' }).waitFor();
      assert.ok(await applications.findByUuid(server.composition.store.db, customerId, shop.uuid), 'nothing is deleted before confirming');
      await page.getByRole('link', { name: 'Cancel' }).click();
      await page.getByRole('heading', { name: 'Shop 2', level: 1 }).waitFor();
      await page.getByRole('button', { name: 'Delete application' }).click();
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByText('Application deleted.').waitFor();
      const left = (await applications.list(customerId)).map((a) => a.name);
      assert.ok(!left.includes('Shop 2'));
      await page.reload();
      await page.getByRole('heading', { name: 'Applications', level: 1 }).waitFor();
      assert.deepEqual((await applications.list(customerId)).map((a) => a.name), left);
    });

    await t.test('OAuth clients: an error beside the name; a delete asks first and a reload repeats nothing', async () => {
      await page.getByRole('link', { name: 'OAuth clients', exact: true }).click();
      await page.locator('form[action$="/oauth-clients"]').evaluate((form) => { (form as HTMLFormElement).noValidate = true; });
      await page.getByRole('button', { name: 'Create OAuth client' }).click();
      await page.locator('#client-name-error').filter({ hasText: /^Client name is required$/ }).waitFor();
      await page.getByLabel('Client name').fill('Back office');
      await page.getByRole('button', { name: 'Create OAuth client' }).click();
      await page.locator('#client-secret').waitFor();
      await page.goto(`${root}/oauth-clients`);
      await page.getByText('1 OAuth client.').waitFor();
      await page.getByRole('button', { name: 'Delete Back office' }).click();
      await page.getByRole('heading', { name: 'Delete OAuth client Back office?' }).waitFor();
      assert.equal((await server.composition.services.oauthClients.list(customerId)).length, 1, 'nothing is deleted before confirming');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByText('OAuth client deleted').waitFor();
      await page.reload();
      await page.getByText('No OAuth clients yet.').waitFor();
      assert.equal((await server.composition.services.oauthClients.list(customerId)).length, 0);
    });
  }));
}
