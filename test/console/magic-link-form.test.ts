/**
 * The console's magic-link form when refused, in a real browser on both stores: the answer is a
 * redirect to the tab (post/redirect/get) that still shows what was typed and the error beside its
 * field; a reload of that page posts nothing and generates nothing.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console magic-link form', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console magic-link form', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console magic-link form', (kind) => {
    test('a refused magic link: redirected, the typed values and the error kept beside the field; a reload sends nothing', async (t) => {
      const server = await consoleServer(t, kind);
      const { users, applications, policies } = server.composition.services;
      const customerId = (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
      await users.create(customerId, { username: 'grace', email: 'grace@example.test', firstName: 'F', lastName: 'L', customAttributes: {} }, SYSTEM);
      const grace = (await users.findByLogin(customerId, 'grace'))!;
      const shop = (await applications.create(customerId, { name: 'Shop', type: 'JWT', returnUrls: ['https://shop.example.test/back'] }, SYSTEM)).application;
      await policies.create(customerId, { applicationUuid: shop.uuid, firstFactor: 'MAGIC_LINK' }, SYSTEM);
      const db = server.composition.store.db;
      const links = async () => (await db.selectFrom('magic_links').select('id').where('user_id', '=', grace.id).execute()).length;

      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.goto(`${server.url}/console/users/${grace.id}/magic-links`);
      await page.getByLabel(/^Redirect URI/).fill('https://elsewhere.example.test/back');
      await page.getByLabel('Expires after (minutes)').fill('30');
      const posts: string[] = [];
      page.on('request', (request) => { if (request.method() === 'POST') posts.push(new URL(request.url()).pathname); });
      const answers: number[] = [];
      page.on('response', (response) => { if (response.request().method() === 'POST') answers.push(response.status()); });
      await page.getByRole('button', { name: 'Generate magic link' }).click();
      await page.locator('#redirectUri-error').waitFor();
      assert.deepEqual(posts, [`/console/users/${grace.id}/magic-link`]);
      assert.deepEqual(answers, [303], 'the refusal is a redirect');
      assert.equal(new URL(page.url()).pathname, `/console/users/${grace.id}/magic-links`);
      assert.equal(await page.locator('#redirectUri-error').innerText(), "Redirect URI must equal one of the application's returnUrls");
      assert.equal(await page.getByLabel(/^Redirect URI/).getAttribute('aria-invalid'), 'true');
      assert.equal(await page.getByLabel(/^Redirect URI/).inputValue(), 'https://elsewhere.example.test/back', 'what was typed is kept');
      assert.equal(await page.getByLabel('Expires after (minutes)').inputValue(), '30');
      assert.equal(await page.getByLabel('Application', { exact: true }).inputValue(), shop.uuid);
      assert.deepEqual((await page.context().cookies()).filter((c) => c.name === 'lk_console_form'), [], 'read once');
      assert.equal(await links(), 0);

      // A reload sends nothing again; the form comes back fresh.
      posts.length = 0;
      await page.reload();
      await page.getByRole('button', { name: 'Generate magic link' }).waitFor();
      assert.deepEqual(posts, []);
      assert.equal(await page.locator('#redirectUri-error').count(), 0);
      assert.equal(await page.getByLabel('Expires after (minutes)').inputValue(), '15');
      assert.equal(await links(), 0);

      // Then right: generated, and the answer is a redirect too.
      await page.getByLabel(/^Redirect URI/).fill('https://shop.example.test/back');
      await page.getByRole('button', { name: 'Generate magic link' }).click();
      await page.getByText('Magic link generated').waitFor();
      assert.equal(await links(), 1);
      posts.length = 0;
      await page.reload();
      await page.getByText('Magic link generated').waitFor();
      assert.deepEqual(posts, []);
      assert.equal(await links(), 1);
    });
  });
}
