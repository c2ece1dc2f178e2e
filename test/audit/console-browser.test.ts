/**
 * The console's Audit log page in a real browser: a user created in the console is listed with the
 * owner as actor; the user's page links (Events) to the page filtered by that user; the action filter;
 * "Older events" pages by cursor. One server and one browser per store.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, createUserInConsole, findChromium, signIn } from '../console/browser.ts';
import { recordEvents } from './helpers.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console audit log page', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console audit log page', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console audit log page', (kind) => test('lists events with filters, pages by cursor, and is linked from each user\'s page', async (t) => {
    const server = await consoleServer(t, kind);
    const customerId = server.customer.customerId;
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();

    // 60 group events first, then a user created in the console: the newest page shows the user's.
    await recordEvents(server, customerId, 60, 'group.updated', (i) => ({ type: 'group', id: `g${i}`, name: `Team ${i}` }));
    const username = `ada${randomBytes(3).toString('hex')}`;
    await createUserInConsole(page, username, 'a long enough password 1');

    await t.test('the user\'s page links to its events; the console acted as the owner', async () => {
      await page.getByRole('link', { name: 'Events' }).click();
      await page.getByRole('heading', { name: 'Audit log' }).waitFor();
      assert.equal(await page.getByLabel('User').inputValue(), username);
      const rows = page.locator('tbody tr');
      assert.equal(await rows.count(), 1);
      const cells = await rows.first().locator('td').allInnerTexts();
      assert.equal(cells[1], 'user.created');
      assert.equal(cells[2], `console ${server.email}`);
      assert.equal(cells[3], `user ${username}`);
      assert.equal(cells[4], '127.0.0.1');
    });

    await t.test('the action filter and paging by cursor', async () => {
      await page.getByRole('link', { name: 'Clear filters' }).click();
      await page.getByLabel('Action').fill('group.');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('Newest events matching the filters').waitFor();
      const rows = page.locator('tbody tr');
      assert.equal(await rows.count(), 50);
      assert.equal((await rows.first().locator('td').allInnerTexts())[3], 'group Team 59');
      await page.getByRole('link', { name: 'Older events' }).click();
      await page.getByText('Older events matching the filters').waitFor();
      assert.equal(await rows.count(), 10);
      assert.equal((await rows.last().locator('td').allInnerTexts())[3], 'group Team 0');
      assert.equal(await page.getByRole('link', { name: 'Older events' }).count(), 0);
      assert.equal(await page.getByLabel('Action').inputValue(), 'group.');

      await page.getByLabel('Action').fill('policy.');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('No events match these filters.').waitFor();
    });

    await t.test('the nav link, an unknown user and a forged cursor: said on the page, 400', async () => {
      await page.getByRole('link', { name: 'Audit log', exact: true }).click();
      await page.getByText('Newest events', { exact: true }).waitFor();
      assert.equal(await page.locator('tbody tr').count(), 50);
      const unknown = await page.goto(`${server.url}/console/audit?user=nobody-${randomBytes(3).toString('hex')}`);
      assert.equal(unknown?.status(), 400);
      await page.getByRole('alert').filter({ hasText: 'No user' }).waitFor();
      const forged = await page.goto(`${server.url}/console/audit?cursor=%21%21`);
      assert.equal(forged?.status(), 400);
      await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
    });
  }));
}
