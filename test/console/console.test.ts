/**
 * The admin console end to end in a real browser (Debian's chromium through playwright-core),
 * through the accessible names DESIGN.md fixes: sign-in with and without an authenticator, users,
 * API-key rotation, CSRF, session expiry. Skips saying why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { signRequest } from '../../src/identity/admin-auth.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, createUserInConsole, signIn } from './browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console', (kind) => {
    test('sign in with e-mail and password; a wrong password says so without telling which part', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server, 'not the password');
      await page.getByRole('alert').filter({ hasText: 'Wrong e-mail or password.' }).waitFor();
      assert.match(page.url(), /\/console\/sign-in$/);
      await page.getByLabel('E-mail').fill('nobody@example.test');
      await page.getByLabel('Password').fill('whatever whatever');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'Wrong e-mail or password.' }).waitFor();

      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      assert.equal(await page.locator('#customer-key').innerText(), server.customer.customerKey);
      for (const name of ['Account', 'Users', 'Groups', 'Applications', 'Site']) await page.getByRole('link', { name, exact: true }).waitFor();
      await page.getByRole('button', { name: 'Reveal API key' }).click();
      assert.equal(await page.locator('#api-key').innerText(), server.customer.apiKey);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await page.goto(`${server.url}/console/account`);
      assert.match(page.url(), /\/console\/sign-in$/);
    });

    test('sign-in is throttled: from the fifth wrong password the owner is blocked (429), even with the right one', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      for (let i = 0; i < 5; i++) {
        await signIn(page, server, `wrong password ${i}`);
        await page.getByRole('alert').filter({ hasText: 'Wrong e-mail or password.' }).waitFor();
      }
      await signIn(page, server);
      await page.getByRole('alert').filter({ hasText: 'Too many attempts' }).waitFor();
      assert.match(page.url(), /\/console\/sign-in$/);
      server.clock.advance(2_000);
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
    });

    test('an owner with an authenticator is asked for its code', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('button', { name: 'Set up authenticator' }).click();
      const secret = await page.locator('#totp-secret').innerText();
      await page.getByLabel('Authenticator code').fill('000000' === totpAt(secret, server.clock.now()) ? '111111' : '000000');
      await page.getByRole('button', { name: 'Turn on' }).click();
      await page.getByRole('alert').filter({ hasText: 'does not match' }).waitFor();
      await page.getByLabel('Authenticator code').fill(totpAt(secret, server.clock.now()));
      await page.getByRole('button', { name: 'Turn on' }).click();
      await page.getByText('Authenticator turned on').waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();

      server.clock.advance(30_000);
      await signIn(page, server);
      await page.getByLabel('Authenticator code').fill(totpAt(secret, server.clock.now() - 120_000));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'That code did not work' }).waitFor();
      await page.goto(`${server.url}/console/account`);
      assert.match(page.url(), /\/console\/sign-in$/, 'the code stage is not signed in');
      await page.getByLabel('Authenticator code').fill(totpAt(secret, server.clock.now()));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
    });

    test('create a user, find it, disable and enable it, reset its MFA, delete it after confirming', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await createUserInConsole(page, 'alice', 'alice password 1');
      const customerId = server.composition.services.customers.findByKey(server.customer.customerKey).then((c) => c!.id);

      await page.getByRole('link', { name: 'Users', exact: true }).click();
      await page.getByLabel('Search').fill('ALI');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('link', { name: 'alice' }).click();
      await page.getByRole('button', { name: 'Disable' }).click();
      await page.getByText('User disabled').waitFor();
      assert.equal((await server.composition.services.users.findByLogin(await customerId, 'alice'))?.isDisabled, true);
      await page.getByRole('button', { name: 'Enable' }).click();
      await page.getByText('User enabled').waitFor();
      assert.equal((await server.composition.services.users.findByLogin(await customerId, 'alice'))?.isDisabled, false);

      const { mfa } = server.composition.services;
      const registration = await mfa.register(await customerId, { login: 'alice', customerDisplayName: 'Example' });
      await mfa.validate(await customerId, { login: 'alice', secret: registration.secret, otp: totpAt(registration.secret, server.clock.now()) }, SYSTEM);
      await page.reload();
      await page.getByRole('button', { name: 'Reset MFA' }).click();
      await page.getByText('Authenticator removed').waitFor();
      assert.equal(await mfa.hasActiveAuthenticator(await customerId, registration.userId), false);

      await page.getByRole('button', { name: 'Delete user' }).click();
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByText('User deleted').waitFor();
      assert.equal(await server.composition.services.users.findByLogin(await customerId, 'alice'), undefined);
    });

    test('rotating the API key: the old key is refused (401), the new one signs', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('button', { name: 'Rotate API key' }).click();
      await page.getByRole('button', { name: 'Rotate', exact: true }).click();
      const newKey = await page.locator('#api-key').innerText();
      assert.notEqual(newKey, server.customer.apiKey);
      const call = (apiKey: string) => {
        const timestamp = String(server.clock.now());
        return fetch(`${server.url}/api/admin/users/stats/count`, {
          headers: { 'customer-key': server.customer.customerKey, timestamp, authorization: signRequest(server.customer.customerKey, timestamp, apiKey) },
        });
      };
      assert.equal((await call(server.customer.apiKey)).status, 401);
      assert.equal((await call(newKey)).status, 200);
    });

    test('a write without the CSRF token, or with a wrong one, is refused (403) and changes nothing', async (t) => {
      const server = await consoleServer(t, kind);
      const context = await browser(t);
      const page = await context.newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      const rotate = `${server.url}/console/account/api-key/rotate`;
      const missing = await context.request.post(rotate, { form: { other: 'x' }, maxRedirects: 0 });
      assert.equal(missing.status(), 403);
      const wrong = await context.request.post(rotate, { form: { _csrf: 'not-a-token' }, maxRedirects: 0 });
      assert.equal(wrong.status(), 403);
      assert.match(await wrong.text(), /not accepted/);
      // A token minted for another session (here: before sign-in) does not pass either.
      const signedOut = await fetch(`${server.url}/console/sign-in`);
      const token = /name="_csrf" value="([^"]+)"/.exec(await signedOut.text())![1]!;
      assert.equal((await context.request.post(rotate, { form: { _csrf: token }, maxRedirects: 0 })).status(), 403);
      const found = await server.composition.services.customers.findForSignature(server.customer.customerKey);
      assert.equal(found?.apiKey, server.customer.apiKey);
    });

    test('the session ends after 30 idle minutes; pages are no-store with a strict CSP', async (t) => {
      const server = await consoleServer(t, kind);
      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      const response = await page.goto(`${server.url}/console/users`);
      const headers = response!.headers();
      assert.equal(headers['cache-control'], 'no-store');
      assert.match(headers['content-security-policy']!, /default-src 'none'; style-src 'self';.*form-action 'self'; frame-ancestors 'none'/);
      const cookies = await page.context().cookies();
      const session = cookies.find((c) => c.name === 'lk_console');
      assert.equal(session?.httpOnly, true);
      assert.equal(session?.sameSite, 'Strict');
      server.clock.advance(29 * 60_000);
      await page.goto(`${server.url}/console/users`);
      await page.getByRole('heading', { name: 'Users' }).waitFor();
      server.clock.advance(30 * 60_000);
      await page.goto(`${server.url}/console/users`);
      assert.match(page.url(), /\/console\/sign-in\?ended=expired$/);
      await page.getByText('Your session ended. Sign in again.').waitFor();
    });
  });
}
