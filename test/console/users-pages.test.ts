/**
 * The console's users pages and API-key rotation in a real browser, through the accessible names
 * DESIGN.md fixes: numbered pages with "Showing F–L of N users", search by any part of a name or
 * e-mail, sorting, Set password (and the change it may require), the user's tabs, form errors beside
 * their fields with what was typed kept, and destructive actions that ask first and are not repeated
 * by a reload.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { SYSTEM } from '../../src/audit/context.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn, type ConsoleServer } from './browser.ts';

after(closeBrowser);

async function customerIdOf(server: ConsoleServer): Promise<number> {
  return (await server.composition.services.customers.findByKey(server.customer.customerKey))!.id;
}

async function addUser(server: ConsoleServer, customerId: number, username: string, extra: { email?: string; firstName?: string; lastName?: string } = {}) {
  return server.composition.services.users.create(customerId, {
    username, email: extra.email ?? `${username}@example.test`, firstName: extra.firstName ?? 'F', lastName: extra.lastName ?? 'L', customAttributes: {},
  }, SYSTEM);
}

const showing = (page: Page) => page.locator('#showing').innerText();
const listed = async (page: Page) => page.locator('tbody tr td:first-child a').allInnerTexts();

async function openUser(page: Page, server: ConsoleServer, username: string): Promise<void> {
  await page.goto(`${server.url}/console/users?q=${encodeURIComponent(username)}`);
  await page.getByRole('link', { name: username, exact: true }).click();
  await page.getByRole('heading', { name: username }).waitFor();
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('console users pages', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console users pages', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console users pages', (kind) => {
    test('60 users: numbered pages with the total, Previous/Next; search by any part of a name or e-mail; sort', async (t) => {
      const server = await consoleServer(t, kind);
      const customerId = await customerIdOf(server);
      for (let i = 1; i <= 57; i++) await addUser(server, customerId, `user${String(i).padStart(2, '0')}`);
      server.clock.advance(60_000);
      await addUser(server, customerId, 'grace', { email: 'g.brewster@navy.test', firstName: 'Grace', lastName: 'Hopper' });
      server.clock.advance(60_000);
      await addUser(server, customerId, 'bob', { email: 'bob@grasshoppers.test', firstName: 'Bob', lastName: 'Jones' });
      server.clock.advance(60_000);
      await addUser(server, customerId, 'alice', { firstName: 'Alice', lastName: 'Happ' });
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('link', { name: 'Users', exact: true }).click();

      assert.equal(await showing(page), 'Showing 1–50 of 60 users');
      assert.equal((await listed(page)).length, 50);
      assert.equal((await listed(page))[0], 'alice', 'sorted by username');
      assert.equal(await page.getByRole('link', { name: 'Previous page' }).count(), 0, 'no previous page on the first');
      await page.getByRole('link', { name: 'Next page' }).click();
      assert.equal(await showing(page), 'Showing 51–60 of 60 users');
      assert.deepEqual((await listed(page)).slice(-2), ['user56', 'user57']);
      assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0, 'no next page on the last');
      assert.equal(await page.getByRole('link', { name: 'Page 2' }).getAttribute('aria-current'), 'page');
      await page.getByRole('link', { name: 'Previous page' }).click();
      assert.equal(await showing(page), 'Showing 1–50 of 60 users');
      await page.getByRole('link', { name: 'Page 2' }).click();
      assert.equal(await showing(page), 'Showing 51–60 of 60 users');

      // "hopp": Grace by her last name, Bob by a part of his e-mail; Alice Happ is not one.
      await page.getByLabel('Search').fill('HOPP');
      await page.getByRole('button', { name: 'Search' }).click();
      assert.deepEqual(await listed(page), ['bob', 'grace']);
      assert.equal(await showing(page), 'Showing 1–2 of 2 users');
      await page.getByLabel('Search').fill('grace hopper');
      await page.getByRole('button', { name: 'Search' }).click();
      assert.deepEqual(await listed(page), ['grace'], 'the full name');
      await page.getByLabel('Search').fill('brewst');
      await page.getByRole('button', { name: 'Search' }).click();
      assert.deepEqual(await listed(page), ['grace']);
      assert.equal(await showing(page), 'Showing 1–1 of 1 user');
      // LIKE's wildcards are text here: "%" matches no one.
      await page.getByLabel('Search').fill('%');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByText('No users match “%”.').waitFor();

      await page.getByLabel('Search').fill('');
      await page.getByLabel('Sort by').selectOption({ label: 'Newest first' });
      await page.getByRole('button', { name: 'Search' }).click();
      assert.deepEqual((await listed(page)).slice(0, 3), ['alice', 'bob', 'grace']);
      assert.equal(await showing(page), 'Showing 1–50 of 60 users');
      await page.getByRole('link', { name: 'Next page' }).click();
      assert.match(page.url(), /sort=created/, 'the pages keep the sort');
      assert.equal(await showing(page), 'Showing 51–60 of 60 users');
      const { users } = server.composition.services;
      await users.recordSignIn(customerId, (await users.findByLogin(customerId, 'user30'))!.id);
      server.clock.advance(60_000);
      await users.recordSignIn(customerId, (await users.findByLogin(customerId, 'user07'))!.id);
      await page.getByLabel('Sort by').selectOption({ label: 'Last sign-in' });
      await page.getByRole('button', { name: 'Search' }).click();
      assert.equal(await showing(page), 'Showing 1–50 of 60 users');
      assert.deepEqual((await listed(page)).slice(0, 4), ['user07', 'user30', 'alice', 'bob'], 'latest sign-in first, then by username');
    });

    test('Set password: errors beside the fields, then the user signs in with it and must change it', async (t) => {
      const server = await consoleServer(t, kind);
      const customerId = await customerIdOf(server);
      const { users } = server.composition.services;
      await addUser(server, customerId, 'grace', { firstName: 'Grace', lastName: 'Hopper' });
      const before = (await users.findByLogin(customerId, 'grace'))!;
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await openUser(page, server, 'grace');
      assert.equal(await page.locator('#password-state').innerText(), 'None (signs in by magic link)');
      await page.getByRole('button', { name: 'Set password' }).click();

      await page.getByLabel('New password').fill('short');
      await page.getByLabel('Confirm password').fill('shorter');
      await page.getByRole('button', { name: 'Save password' }).click();
      assert.equal(await page.locator('#confirmPassword-error').innerText(), 'Confirm password does not match the new password.');
      assert.equal(await page.getByLabel('Confirm password').getAttribute('aria-invalid'), 'true');
      await page.getByLabel('New password').fill('short');
      await page.getByLabel('Confirm password').fill('short');
      await page.getByRole('button', { name: 'Save password' }).click();
      assert.equal(await page.locator('#newPassword-error').innerText(), 'New password must be 8 to 128 characters');
      assert.equal(await page.locator('#confirmPassword-error').count(), 0);
      assert.equal(await users.verifyCredentials(customerId, 'grace', 'short'), undefined, 'nothing saved');

      await page.getByLabel('New password').fill('a new long passphrase');
      await page.getByLabel('Confirm password').fill('a new long passphrase');
      await page.getByLabel('Require a change at next sign-in').check();
      await page.getByRole('button', { name: 'Save password' }).click();
      await page.getByText('Password saved.').waitFor();
      assert.equal(await page.locator('#password-state').innerText(), 'Set; must be changed at the next sign-in');
      const signedIn = await users.verifyCredentials(customerId, 'grace', 'a new long passphrase');
      assert.equal(signedIn?.username, 'grace');
      assert.equal(signedIn?.passwordChangeRequired, true);
      assert.ok(signedIn!.credentialsVersion > before.credentialsVersion, 'earlier site credentials stop working');
      // The content site's token endpoint takes it, and the sign-in shows as the user's last.
      const site = await server.composition.buildSiteApp({ customerKey: server.customer.customerKey });
      t.after(() => site.close());
      assert.equal(await page.locator('#last-sign-in').innerText(), 'Never');
      server.clock.advance(60_000);
      const token = await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'grace', password: 'a new long passphrase' } });
      assert.equal(token.statusCode, 200, token.body);
      assert.equal(token.json().token_type, 'Bearer');
      await page.reload();
      assert.equal(await page.locator('#last-sign-in').innerText(), `${new Date(server.clock.now()).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
      // The user's own change (the admin API's change-password) clears the requirement.
      await users.changePassword(customerId, 'grace', 'a new long passphrase', 'another long passphrase', SYSTEM);
      assert.equal((await users.findByLogin(customerId, 'grace'))?.passwordChangeRequired, false);
      await page.reload();
      assert.equal(await page.locator('#password-state').innerText(), 'Set');
    });

    test("the user's tabs: group memberships, factors, sessions, magic links (Revoke only when one is open, and it asks first)", async (t) => {
      const server = await consoleServer(t, kind);
      const customerId = await customerIdOf(server);
      const { users, groups, mfa, applications, policies } = server.composition.services;
      await groups.upsert(customerId, [{ name: 'Editors', isDefault: false, attributes: {} }], SYSTEM);
      const grace = await addUser(server, customerId, 'grace');
      await users.update(customerId, { username: 'grace', customAttributes: {}, groups: [{ name: 'Editors', attributes: [] }] }, SYSTEM);
      const registration = await mfa.register(customerId, { login: 'grace', customerDisplayName: 'Example' });
      await mfa.validate(customerId, { login: 'grace', secret: registration.secret, otp: totpAt(registration.secret, server.clock.now()) }, SYSTEM);
      const portal = (await applications.create(customerId, { name: 'Portal', type: 'SAML', entityId: 'urn:example:portal', acsUrls: ['https://portal.example.test/acs'] }, SYSTEM)).application;
      await policies.create(customerId, { applicationUuid: portal.uuid, firstFactor: 'MAGIC_LINK' }, SYSTEM);

      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await openUser(page, server, 'grace');
      await page.getByRole('link', { name: 'Group memberships' }).click();
      assert.equal(await page.getByLabel('Editors').isChecked(), true);
      await page.getByText('grace is in 1 group.').waitFor();

      await page.getByRole('link', { name: 'Factors' }).click();
      await page.getByRole('cell', { name: 'Enrolled', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Reset MFA' }).click();
      await page.getByText('Authenticator removed').waitFor();
      await page.getByRole('cell', { name: 'Not enrolled', exact: true }).waitFor();
      assert.equal(await mfa.hasActiveAuthenticator(customerId, grace.id), false);

      await page.getByRole('link', { name: 'Sessions' }).click();
      await page.getByText('grace has no site API keys.').waitFor();

      await page.getByRole('link', { name: 'Magic links' }).click();
      await page.getByText('No magic links yet.').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Revoke magic links' }).count(), 0, 'nothing to revoke');
      assert.equal(await page.getByLabel('Expires after (minutes)').inputValue(), '15', "the admin API's default");
      await page.getByRole('button', { name: 'Generate magic link' }).click();
      await page.getByText('Magic link generated').waitFor();
      await page.getByRole('cell', { name: 'Open', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Revoke magic links' }).click();
      await page.getByRole('heading', { name: "Revoke grace's magic links?" }).waitFor();
      const db = server.composition.store.db;
      const open = async () => (await db.selectFrom('magic_links').select('revoked_at').where('user_id', '=', grace.id).execute()).filter((l) => l.revoked_at === null).length;
      assert.equal(await open(), 1, 'asking changes nothing');
      await page.getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByText('Open magic links revoked.').waitFor();
      assert.equal(await open(), 0);
      assert.match(await page.getByRole('cell', { name: /^Revoked / }).innerText(), /^Revoked \d{4}-/);
      assert.equal(await page.getByRole('button', { name: 'Revoke magic links' }).count(), 0);
      // Disable reads as less severe than Delete.
      await page.getByRole('link', { name: 'Details' }).click();
      assert.equal(await page.getByRole('button', { name: 'Disable' }).getAttribute('class'), 'secondary');
      assert.equal(await page.getByRole('button', { name: 'Delete user' }).getAttribute('class'), 'danger');
    });

    test('a refused form shows every problem beside its field and keeps what was typed', async (t) => {
      const server = await consoleServer(t, kind);
      const customerId = await customerIdOf(server);
      await addUser(server, customerId, 'taken', { email: 'taken@example.test' });
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('link', { name: 'Users', exact: true }).click();
      await page.getByRole('button', { name: 'Create user' }).click();
      await page.getByLabel('Username').fill('newbie');
      await page.getByLabel('E-mail').fill('not-an-email');
      // As a hand-made POST would send it (the field's maxlength stops a browser at the limit).
      await page.getByLabel('First name').evaluate((input) => input.removeAttribute('maxlength'));
      await page.getByLabel('First name').fill('x'.repeat(101));
      await page.getByLabel('Last name').fill('Hopper');
      await page.getByLabel('Password').fill('short');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByText('There are 3 problems with this form').waitFor();
      assert.match(await page.locator('#email-error').innerText(), /^E-mail is not an e-mail address: it must match pattern/);
      assert.equal(await page.locator('#firstName-error').innerText(), 'First name must NOT have more than 100 characters');
      assert.equal(await page.locator('#password-error').innerText(), 'Password must be 8 to 128 characters');
      assert.equal(await page.getByLabel('E-mail').getAttribute('aria-describedby'), 'email-error email-help');
      assert.equal(await page.getByLabel('Username').inputValue(), 'newbie');
      assert.equal(await page.getByLabel('E-mail').inputValue(), 'not-an-email');
      assert.equal(await page.getByLabel('Last name').inputValue(), 'Hopper');
      assert.equal(await page.getByLabel('Username').getAttribute('required'), '', 'required fields are marked');
      assert.equal(await server.composition.services.users.findByLogin(customerId, 'newbie'), undefined);

      // A taken e-mail is the service's answer, beside its field too.
      await page.getByLabel('E-mail').fill('TAKEN@example.test');
      await page.getByLabel('First name').fill('Grace');
      await page.getByRole('button', { name: 'Create' }).click();
      assert.equal(await page.locator('#email-error').innerText(), 'A user with this e-mail already exists.');
      await page.getByLabel('E-mail').fill('newbie@example.test');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByText('User created.').waitFor();

      // The attributes form: two problems at once, the typed text kept.
      await page.getByLabel('Phone').fill('abc<>');
      await page.getByLabel('Custom attributes').fill('customAttribute1=one\nusername=evil');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      assert.match(await page.locator('#phone-error').innerText(), /^Phone may hold digits/);
      assert.equal(await page.locator('#customAttributes-error').innerText(), 'Custom attributes: username is not a custom attribute name (customAttribute1..customAttribute50)');
      assert.equal(await page.getByLabel('Phone').inputValue(), 'abc<>');
      assert.equal(await page.getByLabel('Custom attributes').inputValue(), 'customAttribute1=one\nusername=evil');
    });

    test('Rotate API key asks first; the new key is shown once, and a reload rotates nothing', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      const stored = async () => (await server.composition.services.customers.findForSignature(server.customer.customerKey))!.apiKey;
      await page.getByRole('button', { name: 'Rotate API key' }).click();
      await page.getByRole('heading', { name: 'Rotate API key?' }).waitFor();
      assert.equal(await stored(), server.customer.apiKey, 'asking changes nothing');
      // The key rides to the next page sealed in a one-minute cookie of that page's path, read once.
      const flash: { value: string; httpOnly: boolean; sameSite: string; path: string }[] = [];
      page.on('response', async (response) => {
        const header = (await response.allHeaders())['set-cookie'] ?? '';
        for (const line of header.split('\n')) if (line.startsWith('lk_console_new_key=') && !line.startsWith('lk_console_new_key=;')) flash.push({ value: line, httpOnly: /HttpOnly/i.test(line), sameSite: /SameSite=Strict/i.test(line) ? 'Strict' : '', path: /Path=([^;]+)/.exec(line)?.[1] ?? '' });
      });
      await page.getByRole('button', { name: 'Rotate', exact: true }).click();
      const shown = await page.locator('#api-key').innerText();
      assert.equal(flash.length, 1);
      assert.deepEqual({ ...flash[0], value: undefined }, { value: undefined, httpOnly: true, sameSite: 'Strict', path: '/console/account/api-key/rotated' });
      assert.ok(!flash[0]!.value.includes(shown), 'sealed, not the key itself');
      assert.deepEqual((await page.context().cookies()).filter((c) => c.name === 'lk_console_new_key'), [], 'cleared once read');
      assert.notEqual(shown, server.customer.apiKey);
      assert.equal(await stored(), shown);
      await page.reload();
      await page.getByText('The new API key was shown once').waitFor();
      assert.equal(await page.locator('#api-key').count(), 0, 'shown once');
      assert.equal(await stored(), shown, 'the reload rotated nothing');
    });
  });
}
