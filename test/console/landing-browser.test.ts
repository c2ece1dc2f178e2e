/**
 * The magic-link landing in a real browser (Debian's chromium through playwright-core), because
 * SameSite cookies, CSP form-action and redirects behave there as they do for users, and only there.
 * The application is a small HTTP server on another site (http://localhost:<port>, while Latchkey
 * is http://127.0.0.1:<port>): the JWT redirect, the authenticator-code step and the OAUTH flow
 * (landing → login URL → the provider's authorization endpoint → redirect_uri, all as one
 * navigation after the form POST) must end there without a CSP violation or a lost cookie.
 * Skips saying why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test, type TestContext } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { simpleParser } from 'mailparser';
import * as client from 'openid-client';
import type { Page, Response } from 'playwright-core';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { authorizationRequest, discover } from '../helpers/relying-party.ts';
import { freePort } from '../helpers/ports.ts';
import { describeEachStore, type StoreKind } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from './browser.ts';
import { appServer, type AppServer } from '../helpers/app-server.ts';

after(closeBrowser);

interface Deployment extends TestApp {
  /** LATCHKEY_PUBLIC_URL, where the server listens. */
  url: string;
  issuer: string;
  app: AppServer;
}

async function deploy(t: TestContext, kind: StoreKind): Promise<Deployment> {
  const app = await appServer(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url });
  await server.identity.listen({ port, host: '127.0.0.1' });
  return { ...server, url, issuer: `${url}/customers/${server.customer.customerKey}`, app };
}

interface Fixture {
  username: string;
  email: string;
  applicationUuid: string;
  clientSecret?: string;
}

/** A user, an application and its MAGIC_LINK policy, all through the signed admin API. */
async function fixture(d: Deployment, application: Record<string, unknown>, secondFactor: 'NONE' | 'AUTHENTICATOR_APP' = 'NONE'): Promise<Fixture> {
  const customerKey = Number(d.customer.customerKey);
  const username = `ada${Math.random().toString(36).slice(2, 8)}`;
  const email = `${username}@example.test`;
  const user = await d.admin.post('/admin/users/create', { customerKey, username, email, firstName: 'Ada', lastName: 'Lovelace' });
  assert.equal(user.statusCode, 200, user.body);
  const created = await d.admin.post('/admin/applications/create', { customerKey, name: 'Portal', ...application });
  assert.equal(created.statusCode, 200, created.body);
  const { application: { applicationUuid }, clientSecret } = created.json() as { application: { applicationUuid: string }; clientSecret?: string };
  const policy = await d.admin.post('/admin/policies/create', { customerKey, applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor });
  assert.equal(policy.statusCode, 200, policy.body);
  return { username, email, applicationUuid, clientSecret };
}

/** Generates the INVITE link (signed admin API) and reads it from the .eml the mail worker writes (no SMTP set). */
async function inviteLink(d: Deployment, f: Fixture, redirectUri?: string): Promise<string> {
  const generated = await d.admin.post('/admin/magiclink/generate', { username: f.username, applicationUuid: f.applicationUuid, ...(redirectUri ? { redirectUri } : {}) });
  assert.equal(generated.statusCode, 200, generated.body);
  await d.composition.mailWorker.runOnce();
  const outbox = join(d.composition.config.dataDir, 'outbox');
  for (const name of readdirSync(outbox).filter((file) => file.endsWith('.eml'))) {
    const mail = await simpleParser(readFileSync(join(outbox, name)));
    if (!JSON.stringify(mail.to).includes(f.email)) continue;
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail.text ?? '')?.[0];
    assert.ok(link, 'the mail holds the link');
    return link;
  }
  throw new Error(`no mail to ${f.email} in ${outbox}`);
}

async function discoveryJwks(d: Deployment): Promise<JSONWebKeySet> {
  const discovery = await fetch(`${d.issuer}/.well-known/openid-configuration`);
  assert.equal(discovery.status, 200);
  const jwks = await fetch((await discovery.json() as { jwks_uri: string }).jwks_uri);
  assert.equal(jwks.status, 200);
  return await jwks.json() as JSONWebKeySet;
}

interface Watched {
  page: Page;
  /** Console errors and uncaught page errors (a CSP violation shows up here). */
  errors: string[];
  /** Every response from Latchkey's landing (/magic/...), redirects included. */
  landing: Response[];
}

async function watchedPage(t: TestContext, d: Deployment): Promise<Watched> {
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  const landing: Response[] = [];
  page.on('console', (message) => { if (message.type() === 'error' || message.type() === 'warning') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('response', (response) => { if (response.url().startsWith(`${d.url}/magic/`)) landing.push(response); });
  return { page, errors, landing };
}

/** No CSP report, no script error; the browser's own note on a 400 (wrong code) or 410 (dead link) document is not one. */
function assertNoViolations(watched: Watched): void {
  assert.deepEqual(watched.errors.filter((text) => !/^Failed to load resource: the server responded with a status of (400|410) /.test(text)), []);
  assert.ok(watched.landing.length > 0);
  for (const response of watched.landing) {
    assert.equal(response.headers()['cache-control'], 'no-store', `${response.request().method()} ${response.status()}`);
    assert.match(response.headers()['content-security-policy'] ?? '', /^default-src 'none'; /);
  }
}

/** The confirm page as a user sees it: its button by accessible name, pressed; the navigation it starts. */
async function pressContinue(page: Page, link: string): Promise<void> {
  const shown = await page.goto(link);
  assert.equal(shown?.status(), 200);
  assert.equal(shown?.headers()['cache-control'], 'no-store');
  await page.getByRole('heading', { name: 'Sign in to Portal' }).waitFor();
  await page.getByRole('button', { name: 'Continue to Portal' }).click();
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('landing browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('landing browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('magic-link landing in a browser', (kind) => {
    test('JWT application on another origin: the button posts, CSP form-action lets the 303 through, the id_token verifies; back + reload is the dead-link page', async (t) => {
      const d = await deploy(t, kind);
      const returnUrl = `${d.app.origin}/sso/return`;
      const f = await fixture(d, { type: 'JWT', returnUrls: [returnUrl] });
      const link = await inviteLink(d, f, returnUrl);
      const watched = await watchedPage(t, d);
      const { page } = watched;

      await pressContinue(page, link);
      await page.waitForURL((url) => url.href.startsWith(`${returnUrl}?id_token=`));
      await page.getByRole('heading', { name: 'Application' }).waitFor();
      const arrived = d.app.requests.find((url) => url.pathname === '/sso/return');
      assert.ok(arrived, 'the application received the browser');
      const idToken = arrived.searchParams.get('id_token');
      assert.ok(idToken);
      const { payload } = await jwtVerify(idToken, createLocalJWKSet(await discoveryJwks(d)), {
        issuer: d.issuer, audience: f.applicationUuid, algorithms: ['RS256'], currentDate: new Date(d.clock.now()),
      });
      assert.deepEqual([payload.email, payload.preferred_username, payload.amr], [f.email, f.username, ['email']]);

      await page.goBack();
      assert.equal(page.url(), link);
      const reloaded = await page.reload();
      assert.equal(reloaded?.status(), 410);
      await page.getByRole('heading', { name: 'This sign-in link cannot be used' }).waitFor();
      assert.equal(await page.getByRole('button').count(), 0);
      assert.deepEqual(d.app.requests.map((url) => url.pathname), ['/sso/return'], 'the application was reached once');
      assertNoViolations(watched);
    });

    test('AUTHENTICATOR_APP second factor: the code is asked (label), a real TOTP code completes the redirect; amr has otp', async (t) => {
      const d = await deploy(t, kind);
      const returnUrl = `${d.app.origin}/sso/return?from=latchkey`;
      const f = await fixture(d, { type: 'JWT', returnUrls: [returnUrl] }, 'AUTHENTICATOR_APP');
      // Enrolment through the admin API: register, then validate a code from the secret.
      const customerKey = Number(d.customer.customerKey);
      const registered = await d.admin.post('/auth/google-auth-secret', { customerKey, username: f.username });
      assert.equal(registered.statusCode, 200, registered.body);
      const { secret } = registered.json() as { secret: string };
      const validated = await d.admin.post('/auth/validate-google-auth-secret', {
        customerKey, username: f.username, authenticatorType: 'GOOGLE AUTHENTICATOR', secret, otpToken: totpAt(secret, d.clock.now()),
      });
      assert.equal(validated.statusCode, 200, validated.body);
      d.clock.advance(30_000); // the enrolment's code is spent: the sign-in uses the next one

      const link = await inviteLink(d, f, returnUrl);
      const watched = await watchedPage(t, d);
      const { page } = watched;
      await pressContinue(page, link);
      await page.getByRole('heading', { name: 'Enter your authenticator code' }).waitFor();
      const cookie = (await page.context().cookies(`${d.url}/magic/code`)).find((c) => c.name === 'lk_magic_login');
      assert.deepEqual([cookie?.httpOnly, cookie?.sameSite, cookie?.path], [true, 'Strict', '/magic']);

      const right = totpAt(secret, d.clock.now());
      await page.getByLabel('Authenticator code').fill(right === '000000' ? '111111' : '000000');
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('alert').filter({ hasText: 'The code is incorrect (4 attempts left).' }).waitFor();
      await page.getByLabel('Authenticator code').fill(right);
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${returnUrl}&id_token=`));
      const arrived = d.app.requests.find((url) => url.pathname === '/sso/return');
      assert.equal(arrived?.searchParams.get('from'), 'latchkey');
      const { payload } = await jwtVerify(arrived!.searchParams.get('id_token')!, createLocalJWKSet(await discoveryJwks(d)), {
        issuer: d.issuer, audience: f.applicationUuid, currentDate: new Date(d.clock.now()),
      });
      assert.deepEqual([payload.email, payload.amr], [f.email, ['email', 'otp']]);
      assertNoViolations(watched);
    });

    test('OAUTH application: the POST opens the provider session, the login URL (another site) starts code + PKCE, the browser reaches redirect_uri without a question', async (t) => {
      const d = await deploy(t, kind);
      const loginUrl = `${d.app.origin}/login`;
      const redirectUri = `${d.app.origin}/callback`;
      const f = await fixture(d, { type: 'OAUTH', redirectUris: [redirectUri], loginUrls: [loginUrl] });
      assert.ok(f.clientSecret);
      const config = await discover(d.issuer, f.applicationUuid, f.clientSecret);
      const request = await authorizationRequest(config, redirectUri, 'openid email');
      assert.equal(request.url.searchParams.get('code_challenge_method'), 'S256');
      // The application's login page sends the browser on to the provider: a cross-site top-level
      // navigation, on which the provider's SameSite=Lax cookies must still arrive.
      d.app.redirects.set('/login', request.url.href);

      const link = await inviteLink(d, f);
      const watched = await watchedPage(t, d);
      const { page } = watched;
      await pressContinue(page, link);
      await page.waitForURL((url) => url.href.startsWith(`${redirectUri}?`));
      assert.deepEqual(d.app.requests.map((url) => url.pathname), ['/login', '/callback']);
      const callback = new URL(page.url());
      assert.equal(callback.searchParams.get('state'), request.state);
      assert.ok(callback.searchParams.get('code'), `no code: ${callback.href}`);

      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce,
      });
      const claims = tokens.claims();
      assert.deepEqual([claims?.email, claims?.aud, claims?.iss], [f.email, f.applicationUuid, d.issuer]);
      assertNoViolations(watched);
    });
  });
}
