/**
 * The hosted sign-in in a real browser (Debian's chromium through playwright-core): SameSite
 * cookies, CSP form-action on the redirects after a POST, and the pages' accessible names behave
 * there as they do for people. Relying parties are on another site (http://localhost:<port>);
 * openid-client redeems the codes. Skips saying why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { authorizationRequest, discover } from '../../helpers/relying-party.ts';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import {
  createApplication, createUser, deploy, enrolAuthenticator, mailedCode, signInWithPassword, type Deployment, type TestApplication,
} from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await closeBrowser(); await sink?.stop(); });

interface Watched { page: Page; errors: string[] }

async function watchedPage(t: TestContext): Promise<Watched> {
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  return { page, errors };
}

/** No CSP violation or script error; the browser's own note on a 4xx document (a wrong password) is not one. */
function assertNoViolations(watched: Watched): void {
  assert.deepEqual(watched.errors.filter((text) => !/^Failed to load resource: the server responded with a status of 4\d\d /.test(text)), []);
}

async function jwks(d: Deployment): Promise<JSONWebKeySet> {
  const discovery = await (await fetch(`${d.issuer}/.well-known/openid-configuration`)).json() as { jwks_uri: string };
  return await (await fetch(discovery.jwks_uri)).json() as JSONWebKeySet;
}

/** An OAUTH application's authorization request (code + PKCE) through openid-client. */
async function oauthStart(d: Deployment, application: TestApplication, redirectUri: string) {
  const config = await discover(d.issuer, application.uuid, application.clientSecret!);
  const request = await authorizationRequest(config, redirectUri, 'openid email');
  return { config, request };
}

/** Redeems the code at the callback the browser reached; the id_token's claims. */
async function redeem(page: Page, started: Awaited<ReturnType<typeof oauthStart>>) {
  const tokens = await client.authorizationCodeGrant(started.config, new URL(page.url()), {
    pkceCodeVerifier: started.request.codeVerifier, expectedState: started.request.state, expectedNonce: started.request.nonce,
  });
  return tokens.claims()!;
}

async function idTokenAt(d: Deployment, url: string, audience: string) {
  const token = new URL(url).searchParams.get('id_token');
  assert.ok(token, `no id_token in ${url}`);
  return (await jwtVerify(token, createLocalJWKSet(await jwks(d)), { issuer: d.issuer, audience, currentDate: new Date(d.clock.now()) })).payload;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('sign-in browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('sign-in browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('hosted sign-in in a browser', (kind) => {
    test('OAUTH: password and authenticator code; then a second OAUTH application and a JWT application sign in without asking; disabling the user ends the session', async (t) => {
      const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
      const callback = `${d.app.origin}/callback`;
      const first = await createApplication(d, { type: 'OAUTH', redirectUris: [callback], name: 'Portal' }, 'PASSWORD', 'AUTHENTICATOR_APP');
      const second = await createApplication(d, { type: 'OAUTH', redirectUris: [`${d.app.origin}/other`], name: 'Wiki' }, 'PASSWORD');
      const jwtReturn = `${d.app.origin}/jwt-return`;
      const third = await createApplication(d, { type: 'JWT', returnUrls: [jwtReturn], name: 'Tracker' }, 'PASSWORD');
      const user = await createUser(d);
      const secret = await enrolAuthenticator(d, user);
      const watched = await watchedPage(t);
      const { page } = watched;

      const started = await oauthStart(d, first, callback);
      await page.goto(started.request.url.href);
      await page.getByRole('heading', { name: 'Sign in to Portal' }).waitFor();
      assert.equal(await page.getByLabel('Username or e-mail').getAttribute('autocomplete'), 'username webauthn');
      await signInWithPassword(page, user.username, 'not the password');
      await page.getByRole('alert').filter({ hasText: 'Wrong username or password.' }).waitFor();
      await page.getByLabel('Password').fill('correct horse battery staple');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('Authenticator code').fill(totpAt(secret, d.clock.now()));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${callback}?`));
      const claims = await redeem(page, started);
      assert.deepEqual([claims.email, claims.aud, claims.amr], [user.email, first.uuid, ['pwd', 'otp']]);
      const ssoCookie = (await page.context().cookies(d.issuer + '/')).find((c) => c.name === 'lk_sso');
      assert.deepEqual([ssoCookie?.httpOnly, ssoCookie?.sameSite, ssoCookie?.path], [true, 'Lax', `/customers/${d.customer.customerKey}/`]);

      // Another application of the customer: no question asked.
      const other = await oauthStart(d, second, `${d.app.origin}/other`);
      await page.goto(other.request.url.href);
      await page.waitForURL((url) => url.href.startsWith(`${d.app.origin}/other?`));
      assert.equal((await redeem(page, other)).email, user.email);

      await page.goto(`${d.issuer}/jwt/authorize?client_id=${third.uuid}&redirect_uri=${encodeURIComponent(jwtReturn)}&state=s%201`);
      await page.waitForURL((url) => url.href.startsWith(`${jwtReturn}?`));
      assert.equal(new URL(page.url()).searchParams.get('state'), 's 1');
      const payload = await idTokenAt(d, page.url(), third.uuid);
      assert.deepEqual([payload.sub, payload.email, payload.preferred_username, payload.amr], [String(user.id), user.email, user.username, ['pwd', 'otp']]);

      // Disabled: the next authorization starts at step 1, at the provider and at JWT authorize.
      const disabled = await d.admin.post('/admin/users/disable', { customerKey: Number(d.customer.customerKey), username: user.username });
      assert.equal(disabled.statusCode, 200, disabled.body);
      d.clock.advance(2_000);
      const again = await oauthStart(d, second, `${d.app.origin}/other`);
      await page.goto(again.request.url.href);
      await page.getByLabel('Username or e-mail').waitFor();
      assert.match(page.url(), /\/sign-in\/[A-Za-z0-9_-]{43}$/);
      await page.goto(`${d.issuer}/jwt/authorize?client_id=${third.uuid}&redirect_uri=${encodeURIComponent(jwtReturn)}`);
      await page.getByLabel('Username or e-mail').waitFor();
      // A disabled user gets the wrong-password message, even with the right password.
      await signInWithPassword(page, user.username);
      await page.getByRole('alert').filter({ hasText: 'Wrong username or password.' }).waitFor();
      assertNoViolations(watched);
    });

    test('JWT application: password sign-in, the id_token at redirect_uri with state; a bad request is a 400 page, never a redirect', async (t) => {
      const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
      const jwtReturn = `${d.app.origin}/jwt-return?from=latchkey`;
      const app = await createApplication(d, { type: 'JWT', returnUrls: [jwtReturn], name: 'Tracker' }, 'PASSWORD');
      const user = await createUser(d);
      const watched = await watchedPage(t);
      const { page } = watched;
      await page.goto(`${d.issuer}/jwt/authorize?client_id=${app.uuid}&redirect_uri=${encodeURIComponent(jwtReturn)}&state=xyz`);
      await page.getByRole('heading', { name: 'Sign in to Tracker' }).waitFor();
      await signInWithPassword(page, user.email);
      await page.waitForURL((url) => url.href.startsWith(`${d.app.origin}/jwt-return?from=latchkey&id_token=`));
      assert.equal(new URL(page.url()).searchParams.get('state'), 'xyz');
      const payload = await idTokenAt(d, page.url(), app.uuid);
      assert.deepEqual([payload.sub, payload.amr], [String(user.id), ['pwd']]);
      assertNoViolations(watched);

      for (const query of [
        `client_id=${app.uuid}`,
        `client_id=${app.uuid}&redirect_uri=${encodeURIComponent(`${d.app.origin}/jwt-return`)}`,
        `client_id=${app.uuid}&redirect_uri=${encodeURIComponent(`${jwtReturn}&x=1`)}`,
        `client_id=00000000-0000-4000-8000-000000000000&redirect_uri=${encodeURIComponent(jwtReturn)}`,
        `redirect_uri=${encodeURIComponent(jwtReturn)}`,
      ]) {
        const response = await fetch(`${d.issuer}/jwt/authorize?${query}`, { redirect: 'manual' });
        assert.equal(response.status, 400, query);
        assert.equal(response.headers.get('location'), null);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
        assert.match(await response.text(), /<h1>This sign-in request is not valid<\/h1>/);
      }
    });

    test('MAGIC_LINK by code in this browser; then step-up: a PASSWORD application asks only the password', async (t) => {
      const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
      const magicReturn = `${d.app.origin}/magic-return`;
      const magicApp = await createApplication(d, { type: 'JWT', returnUrls: [magicReturn], name: 'Mailbox' }, 'MAGIC_LINK');
      const pwdReturn = `${d.app.origin}/pwd-return`;
      const pwdApp = await createApplication(d, { type: 'JWT', returnUrls: [pwdReturn], name: 'Ledger' }, 'PASSWORD');
      const user = await createUser(d);
      const watched = await watchedPage(t);
      const { page } = watched;

      await page.goto(`${d.issuer}/jwt/authorize?client_id=${magicApp.uuid}&redirect_uri=${encodeURIComponent(magicReturn)}`);
      await page.getByLabel('Username or e-mail').fill(user.username);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByText('a sign-in mail is on its way').waitFor();
      const { code } = await mailedCode(d, sink, user.email);
      await page.getByLabel('Code').fill(code === '000000' ? '111111' : '000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'The code is incorrect. 4 attempts left.' }).waitFor();
      await page.getByLabel('Code').fill(code);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${magicReturn}?`));
      assert.deepEqual((await idTokenAt(d, page.url(), magicApp.uuid)).amr, ['email']);

      await page.goto(`${d.issuer}/jwt/authorize?client_id=${pwdApp.uuid}&redirect_uri=${encodeURIComponent(pwdReturn)}`);
      // Only the missing factor: the password page, the username already known.
      await page.getByLabel('Password').waitFor();
      assert.equal(await page.getByLabel('Username or e-mail').inputValue(), user.username);
      await page.getByLabel('Password').fill('correct horse battery staple');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${pwdReturn}?`));
      assert.deepEqual((await idTokenAt(d, page.url(), pwdApp.uuid)).amr, ['email', 'pwd']);
      assertNoViolations(watched);
    });

    test('a policy asking for an authenticator the user lacks: enrolled during the sign-in (QR and code), then the recovery codes; one of them works once', async (t) => {
      const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
      const jwtReturn = `${d.app.origin}/jwt-return`;
      const app = await createApplication(d, { type: 'JWT', returnUrls: [jwtReturn], name: 'Vault' }, 'PASSWORD', 'AUTHENTICATOR_APP');
      const user = await createUser(d);
      const watched = await watchedPage(t);
      const { page } = watched;
      await page.goto(`${d.issuer}/jwt/authorize?client_id=${app.uuid}&redirect_uri=${encodeURIComponent(jwtReturn)}`);
      await signInWithPassword(page, user.username);
      await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
      const secret = (await page.locator('input[name=secret]').inputValue());
      await page.getByLabel('Authenticator code').fill(totpAt(secret, d.clock.now()));
      await page.getByRole('button', { name: 'Verify' }).click();
      const codes = await page.locator('ul.codes li').allInnerTexts();
      assert.equal(codes.length, 10);
      assert.equal(new Set(codes).size, 10);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${jwtReturn}?`));
      assert.deepEqual((await idTokenAt(d, page.url(), app.uuid)).amr, ['pwd', 'otp']);
      assert.equal(await d.composition.services.mfa.hasActiveAuthenticator(d.customer.customerId, user.id), true);
      assertNoViolations(watched);

      // A recovery code works once, in place of the authenticator code (each attempt in a fresh browser).
      for (const expected of ['signed in', 'refused']) {
        const other = await (await browser(t)).newPage();
        await other.goto(`${d.issuer}/jwt/authorize?client_id=${app.uuid}&redirect_uri=${encodeURIComponent(jwtReturn)}`);
        await signInWithPassword(other, user.username);
        await other.getByRole('link', { name: 'Use a recovery code' }).click();
        await other.getByLabel('Recovery code').fill(codes[3]!);
        await other.getByRole('button', { name: 'Verify' }).click();
        if (expected === 'signed in') {
          await other.waitForURL((url) => url.href.startsWith(`${jwtReturn}?`));
          assert.deepEqual((await idTokenAt(d, other.url(), app.uuid)).amr, ['pwd', 'otp']);
        } else {
          await other.getByRole('alert').filter({ hasText: 'The code is incorrect.' }).waitFor();
          assert.ok(other.url().includes('/sign-in/'));
        }
      }
      assert.equal(await d.composition.services.recoveryCodes.remaining(d.customer.customerId, user.id), 9);
    });
  });
}
