/**
 * A user's Sessions tab in a real browser, on both stores: the live SSO sessions listed (browser,
 * address, signed in, last seen, ends), Revoke one and Revoke all sessions each asking first on a page
 * with a button `Revoke`, the answer a redirect so a reload posts nothing; "No active sessions." and no
 * Revoke when there is none; the site API keys under their own heading.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0';
const SAFARI = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1';
const when = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** The listed sessions' cells, a row each. */
const rows = async (page: Page) => Promise.all((await page.locator('#sso-sessions tbody tr').all()).map(async (row) => (await row.locator('td').allInnerTexts()).slice(0, 5)));

/** The POSTs the page sends while `work` runs. */
async function postsDuring(page: Page, work: () => Promise<unknown>): Promise<string[]> {
  const posts: string[] = [];
  const listener = (request: { method(): string; url(): string }) => { if (request.method() === 'POST') posts.push(request.url()); };
  page.on('request', listener);
  try {
    await work();
  } finally {
    page.off('request', listener);
  }
  return posts;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('console sessions tab', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console sessions tab', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console sessions tab', (kind) => {
    test('lists the SSO sessions; Revoke and Revoke all sessions ask first, and a reload repeats nothing', async (t) => {
      const server = await consoleServer(t, kind);
      const { users, ssoSessions } = server.composition.services;
      const customerId = (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
      for (const username of ['grace', 'alan']) {
        await users.create(customerId, { username, email: `${username}@example.test`, firstName: 'F', lastName: 'L', customAttributes: {} }, SYSTEM);
      }
      const grace = (await users.findByLogin(customerId, 'grace'))!;
      const alan = (await users.findByLogin(customerId, 'alan'))!;
      const start = server.clock.now();
      const firefox = await ssoSessions.open(customerId, grace.id, ['pwd'], { userAgent: FIREFOX, address: '203.0.113.7' });
      server.clock.advance(5 * 60_000);
      const safari = await ssoSessions.open(customerId, grace.id, ['email'], { userAgent: SAFARI, address: '2001:db8::5' });
      const alans = await ssoSessions.open(customerId, alan.id, ['pwd'], { userAgent: FIREFOX, address: '198.51.100.1' });
      const idleMs = ssoSessions.limits.idleMs;

      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.goto(`${server.url}/console/users/${grace.id}`);
      await page.getByRole('link', { name: 'Sessions' }).click();
      await page.getByRole('heading', { name: 'Sign-in sessions' }).waitFor();
      await page.getByText('grace has 2 active sessions.').waitFor();
      // Most recently used first; each ends at the sooner of its idle limit and its absolute end.
      assert.deepEqual(await rows(page), [
        [SAFARI, '2001:db8::5', when(start + 5 * 60_000), when(start + 5 * 60_000), when(start + 5 * 60_000 + idleMs)],
        [FIREFOX, '203.0.113.7', when(start), when(start), when(start + idleMs)],
      ]);
      // The site API keys keep their place under their own heading.
      await page.getByRole('heading', { name: 'Site API keys' }).waitFor();
      await page.getByText('grace has no site API keys.').waitFor();

      // Revoke one: a page that asks first, naming the browser; asking changes nothing.
      await page.getByRole('row').filter({ hasText: FIREFOX }).getByRole('button', { name: 'Revoke' }).click();
      await page.getByRole('heading', { name: 'Revoke this session of grace?' }).waitFor();
      await page.getByText(FIREFOX).waitFor();
      assert.ok(await ssoSessions.current(customerId, firefox.value), 'asking changes nothing');
      const revokeOne = await postsDuring(page, () => page.getByRole('button', { name: 'Revoke', exact: true }).click().then(() => page.getByText('Session revoked').waitFor()));
      assert.equal(revokeOne.length, 1);
      assert.equal(await ssoSessions.current(customerId, firefox.value), undefined, 'that browser signs in again');
      assert.ok(await ssoSessions.current(customerId, safari.value), 'the other session stays');
      assert.deepEqual((await rows(page)).map((r) => r[0]), [SAFARI]);
      assert.deepEqual(await postsDuring(page, () => page.reload()), [], 'a reload posts nothing');
      await page.getByText('grace has 1 active session.').waitFor();

      // Revoke all: asks first, then every session of grace ends and none of alan's.
      const again = await ssoSessions.open(customerId, grace.id, ['pwd'], { userAgent: FIREFOX, address: '203.0.113.8' });
      await page.reload();
      await page.getByRole('button', { name: 'Revoke all sessions' }).click();
      await page.getByRole('heading', { name: "Revoke all of grace's sessions?" }).waitFor();
      await page.getByText('Each of the 2 browsers where grace is signed in must sign in again').waitFor();
      assert.equal((await ssoSessions.listForUser(customerId, grace.id)).length, 2, 'asking changes nothing');
      await page.getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByText('Sessions revoked').waitFor();
      await page.getByText('No active sessions.').waitFor();
      assert.equal(await page.getByRole('button', { name: /^Revoke/ }).count(), 0, 'nothing to revoke, no Revoke');
      assert.deepEqual(await ssoSessions.listForUser(customerId, grace.id), []);
      assert.equal(await ssoSessions.current(customerId, again.value), undefined);
      assert.ok(await ssoSessions.current(customerId, alans.value), "alan's session stays");

      // A reload of the result posts nothing: a session opened since stays.
      const later = await ssoSessions.open(customerId, grace.id, ['pwd'], { userAgent: SAFARI, address: '2001:db8::6' });
      assert.deepEqual(await postsDuring(page, () => page.reload()), []);
      assert.ok(await ssoSessions.current(customerId, later.value), 'the reload revoked nothing');
    });

    test('a session that ended while its confirmation page was open is said, not an error', async (t) => {
      const server = await consoleServer(t, kind);
      const { users, ssoSessions } = server.composition.services;
      const customerId = (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
      await users.create(customerId, { username: 'grace', email: 'grace@example.test', firstName: 'F', lastName: 'L', customAttributes: {} }, SYSTEM);
      const grace = (await users.findByLogin(customerId, 'grace'))!;
      const open = await ssoSessions.open(customerId, grace.id, ['pwd'], { userAgent: FIREFOX, address: '203.0.113.7' });
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.goto(`${server.url}/console/users/${grace.id}/sessions`);
      await page.getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByRole('heading', { name: 'Revoke this session of grace?' }).waitFor();
      await ssoSessions.end(customerId, open.value);
      await page.getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByText('That session had already ended.').waitFor();
      await page.getByText('No active sessions.').waitFor();
      // Another user's session, or one that does not exist, is never reached through this user's page.
      const other = await page.goto(`${server.url}/console/users/${grace.id}/sessions/999999/revoke`);
      assert.equal(other?.status(), 200);
      await page.getByText('That session had already ended.').waitFor();
      assert.equal((await page.goto(`${server.url}/console/users/${grace.id}/sessions/abc/revoke`))?.status(), 404);
    });
  });
}
