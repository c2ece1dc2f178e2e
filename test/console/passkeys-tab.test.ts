/**
 * A user's passkeys on the console's Factors tab, in a real browser on both stores: listed by name,
 * created and last used ("Never" until used); `Remove` asks first on a page naming it, and the answer is
 * a redirect; the passkey is gone from the service too. Rows are written through the repo (a real
 * registration is the passkey tests' part).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import * as repo from '../../src/identity/passkeys/repo.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

const when = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

if (!findChromium()) {
  if (process.env.CI === 'true') test('console passkeys', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console passkeys', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console passkeys on the Factors tab', (kind) => {
    test('lists the user\'s passkeys; Remove asks first, then the passkey is gone', async (t) => {
      const server = await consoleServer(t, kind);
      const { users, passkeys } = server.composition.services;
      const customerId = (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
      await users.create(customerId, { username: 'grace', email: 'grace@example.test', firstName: 'G', lastName: 'H', customAttributes: {} }, SYSTEM);
      const grace = (await users.findByLogin(customerId, 'grace'))!;
      const created = server.clock.now();
      const insert = (name: string, lastUsedAt: number | null) => repo.insertPasskey(server.composition.store.db, {
        customerId, userId: grace.id, credentialId: `console-${kind}-${name}-${created}`, publicKey: 'pQECAyYgASFY', counter: 0, transports: [],
        deviceType: 'singleDevice', backedUp: false, name, createdAt: created, lastUsedAt,
      });
      await insert('Work laptop', null);
      const phone = await insert('Phone', created + 3_600_000);

      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.goto(`${server.url}/console/users/${grace.id}`);
      await page.getByRole('link', { name: 'Factors' }).click();
      await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
      const rows = await Promise.all((await page.locator('#passkeys tbody tr').all()).map(async (row) => (await row.locator('td').allInnerTexts()).slice(0, 3)));
      assert.deepEqual(rows, [['Work laptop', when(created), 'Never'], ['Phone', when(created), when(created + 3_600_000)]]);

      await page.getByRole('button', { name: 'Remove Phone' }).click();
      await page.getByRole('heading', { name: "Remove grace's passkey Phone?" }).waitFor();
      await page.getByRole('button', { name: 'Remove', exact: true }).click();
      await page.getByText('Passkey removed: it no longer signs the user in.').waitFor();
      assert.deepEqual(await page.locator('#passkeys tbody td:first-child').allInnerTexts(), ['Work laptop']);
      assert.deepEqual((await passkeys.list({ customerId, userId: grace.id })).map((p) => p.name), ['Work laptop']);

      // The confirmation page of a passkey removed meanwhile says so instead.
      await page.goto(`${server.url}/console/users/${grace.id}/passkeys/${phone.id}/remove`);
      await page.getByText('That passkey had already been removed.').waitFor();
    });
  });
}
