/**
 * The console's SCIM page in a real browser: the base URL to paste into the directory, create (a bad
 * name shown beside its field, nothing stored; the token shown once and working), the listing without
 * the token, and delete after a confirmation page (the token stops working). Both stores.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from '../console/browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console SCIM page', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console SCIM page', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console SCIM page', (kind) => test('base URL, create (token once), list, delete', async (t) => {
    const server = await consoleServer(t, kind);
    const { scimTokens } = server.composition.services;
    const customerId = server.customer.customerId;
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();

    await page.getByRole('link', { name: 'SCIM', exact: true }).click();
    await page.getByRole('heading', { name: 'SCIM', level: 1 }).waitFor();
    assert.equal(await page.locator('#scim-base-url').innerText(), `${server.composition.config.publicUrl}/scim/v2`);
    await page.getByText('No SCIM tokens yet.').waitFor();

    // The browser's own maxlength taken off, as a hand-made POST would: the rule's reason beside the field.
    await page.locator('#scim-token-name').evaluate((input) => input.removeAttribute('maxlength'));
    await page.getByLabel('Token name').fill('x'.repeat(101));
    await page.getByRole('button', { name: 'Create SCIM token' }).click();
    await page.locator('#scim-token-name-error').filter({ hasText: 'Token name must NOT have more than 100 characters' }).waitFor();
    assert.deepEqual(await scimTokens.list(customerId), [], 'nothing stored');

    await page.getByLabel('Token name').fill('Okta');
    await page.getByRole('button', { name: 'Create SCIM token' }).click();
    const token = await page.locator('#scim-token').innerText();
    assert.match(token, /^lkscim_/);
    await page.getByText('shown once; copy it now').waitFor();
    const cells = async () => (await page.getByRole('row').filter({ hasText: 'Okta' }).getByRole('cell').allInnerTexts()).slice(0, 3);
    assert.deepEqual(await cells(), ['Okta', new Date(server.clock.now()).toISOString().slice(0, 10), 'Never']);
    await page.getByText('1 SCIM token.').waitFor();

    // The directory's first request; then shown once: the page read again lists the token without it, with that use.
    server.clock.advance(60_000);
    assert.equal((await scimTokens.authenticate(token))?.customerId, customerId);
    await page.getByRole('link', { name: 'SCIM', exact: true }).click();
    await page.getByText('1 SCIM token.').waitFor();
    assert.equal((await cells())[2], `${new Date(server.clock.now()).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
    assert.equal(await page.locator('#scim-token').count(), 0);
    assert.ok(!(await page.content()).includes(token));

    await page.getByRole('button', { name: 'Delete Okta' }).click();
    await page.getByRole('heading', { name: 'Delete SCIM token Okta?' }).waitFor();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('SCIM token deleted; requests carrying it are refused.').waitFor();
    await page.getByText('No SCIM tokens yet.').waitFor();
    assert.deepEqual(await scimTokens.list(customerId), []);
    assert.equal(await scimTokens.authenticate(token), undefined);
  }));
}
