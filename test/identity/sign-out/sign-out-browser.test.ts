/**
 * Sign-out in a real browser (Chromium through playwright-core) with openid-client as the relying
 * party on another site: an INVITE link to OAUTH application A opens the customer's SSO session;
 * OpenID Connect RP-initiated logout (openid-client's buildEndSessionUrl) with a registered
 * post_logout_redirect_uri ends it (and the provider's session) and sends the browser back there, so
 * neither A nor B gets a code any more without the sign-in; an unregistered one is refused and sends
 * the browser nowhere; `<issuer>/logout` ends the session the same way. Both stores.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { SSO_COOKIE } from '../../../src/identity/sso-sessions/service.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { authorizationRequest, discover } from '../../helpers/relying-party.ts';
import { describeEachStore, type StoreKind } from '../../helpers/stores.ts';
import { deploy, inviteLink, oauthApplication, user, type Deployment } from './deployment.ts';

after(closeBrowser);

interface Setting {
  d: Deployment;
  page: Page;
  /** CSP reports and script errors the browser printed. */
  errors: string[];
  person: { username: string; email: string; id: number };
  a: { uuid: string; config: client.Configuration; callback: string };
  b: { uuid: string; config: client.Configuration; callback: string };
  signedOut: string;
}

async function setting(t: TestContext, kind: StoreKind): Promise<Setting> {
  const d = await deploy(t, kind);
  const origin = d.app.origin;
  const signedOut = `${origin}/signed-out`;
  const person = await user(d, 'ada');
  const appA = await oauthApplication(d, 'Wiki', { redirectUris: [`${origin}/a/callback`], loginUrls: [`${origin}/a/login`], postLogoutRedirectUris: [signedOut] });
  const appB = await oauthApplication(d, 'Tracker', { redirectUris: [`${origin}/b/callback`] });
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  return {
    d, page, errors, person, signedOut,
    a: { uuid: appA.uuid, config: await discover(d.issuer, appA.uuid, appA.secret), callback: `${origin}/a/callback` },
    b: { uuid: appB.uuid, config: await discover(d.issuer, appB.uuid, appB.secret), callback: `${origin}/b/callback` },
  };
}

/** The browser's SSO cookie for the customer's issuer (undefined when it has none). */
async function ssoCookie(s: Setting) {
  return (await s.page.context().cookies(`${s.d.issuer}/`)).find((c) => c.name === SSO_COOKIE);
}

/** A's login URL starts the code flow; the INVITE link's button ends at A's callback with a code, exchanged by openid-client. */
async function signInToA(s: Setting): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
  const request = await authorizationRequest(s.a.config, s.a.callback, 'openid email');
  s.d.app.redirects.set('/a/login', request.url.href);
  await s.page.goto(await inviteLink(s.d, s.person.username, s.person.email, s.a.uuid));
  await s.page.getByRole('button', { name: 'Continue to Wiki' }).click();
  await s.page.waitForURL((url) => url.href.startsWith(`${s.a.callback}?`));
  return client.authorizationCodeGrant(s.a.config, new URL(s.page.url()), {
    pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce,
  });
}

/**
 * An authorization request of the application in this browser: the code when it signs in without a
 * page, else undefined (the browser stays at Latchkey: the sign-in or the interaction page).
 */
async function authorize(s: Setting, app: Setting['a']): Promise<string | undefined> {
  const request = await authorizationRequest(app.config, app.callback, 'openid email');
  await s.page.goto(request.url.href);
  const landed = new URL(s.page.url());
  if (!landed.href.startsWith(`${app.callback}?`)) {
    assert.equal(landed.origin, s.d.url, `the browser stays at Latchkey (${landed.href})`);
    return undefined;
  }
  const tokens = await client.authorizationCodeGrant(app.config, landed, {
    pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce,
  });
  return tokens.claims()?.email as string;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('sign-out browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('sign-out browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('sign-out in a browser', (kind) => {
    test('an INVITE link opens the SSO session (cookie at the issuer\'s path); RP-initiated logout with a registered URI ends it there, and A needs a sign-in again', async (t) => {
      const s = await setting(t, kind);
      const tokens = await signInToA(s);
      assert.equal(tokens.claims()?.email, s.person.email);

      const cookie = await ssoCookie(s);
      assert.ok(cookie, 'the landing set the SSO cookie');
      assert.deepEqual([cookie.path, cookie.httpOnly, cookie.sameSite], [`${s.d.issuerPath}/`, true, 'Lax']);
      const signedIn = await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value);
      assert.deepEqual([signedIn?.user.username, signedIn?.session.amr], [s.person.username, ['email']]);

      // The discovery document names the end_session_endpoint openid-client builds the URL from.
      const endSession = client.buildEndSessionUrl(s.a.config, { post_logout_redirect_uri: s.signedOut, id_token_hint: tokens.id_token!, state: 'bye-1' });
      assert.equal(endSession.origin + endSession.pathname, `${s.d.issuer}/session/end`);
      await s.page.goto(endSession.href);
      await s.page.getByRole('heading', { name: 'Sign out' }).waitFor();
      await s.page.getByRole('button', { name: 'Sign out' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(s.signedOut));
      assert.equal(new URL(s.page.url()).searchParams.get('state'), 'bye-1');

      assert.equal(await ssoCookie(s), undefined, 'the SSO cookie is gone');
      assert.equal(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value), undefined, 'the session has ended');
      const callbacks = s.d.app.requests.filter((url) => url.pathname.endsWith('/callback')).length;
      assert.equal(await authorize(s, s.a), undefined, 'A asks for a sign-in');
      assert.equal(await authorize(s, s.b), undefined, 'B asks for a sign-in');
      assert.equal(s.d.app.requests.filter((url) => url.pathname.endsWith('/callback')).length, callbacks, 'no code reached either application');
      assert.deepEqual(s.errors.filter((e) => /Content Security Policy/i.test(e)), []);
    });

    test('app B of the same customer signs in without a page after the link to A; RP-initiated logout then ends both', async (t) => {
      const s = await setting(t, kind);
      await signInToA(s);
      assert.equal(await authorize(s, s.b), s.person.email, 'B signs in by the SSO session');
      await s.page.goto(client.buildEndSessionUrl(s.b.config, {}).href);
      await s.page.getByRole('button', { name: 'Sign out' }).click();
      await s.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.equal(await authorize(s, s.a), undefined, 'A asks for a sign-in');
      assert.equal(await authorize(s, s.b), undefined, 'B asks for a sign-in');
    });

    test('a post_logout_redirect_uri that is not registered exactly is refused: a 400 page, no redirect, the session stays', async (t) => {
      const s = await setting(t, kind);
      await signInToA(s);
      const cookie = await ssoCookie(s);
      const upper = s.signedOut.replace('localhost', 'LOCALHOST');
      for (const target of [`${s.d.app.origin}/elsewhere`, upper, `${s.signedOut}/`]) {
        const shown = await s.page.goto(client.buildEndSessionUrl(s.a.config, { post_logout_redirect_uri: target }).href);
        assert.equal(shown?.status(), 400, target);
        assert.equal(new URL(s.page.url()).origin, s.d.url, `${target}: no redirect`);
        assert.equal(await s.page.getByRole('button', { name: 'Sign out' }).count(), 0, `${target}: nothing to confirm`);
      }
      assert.equal(s.d.app.requests.some((url) => url.pathname === '/elsewhere' || url.pathname.startsWith('/signed-out')), false);
      assert.ok(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie!.value), 'still signed in');
    });

    test('a browser with an SSO session but no provider session (after a JWT application link) is asked too: nothing signs it out without the button', async (t) => {
      const s = await setting(t, kind);
      const returnUrl = `${s.d.app.origin}/jwt/return`;
      const created = await s.d.admin.post('/admin/applications/create', { customerKey: s.d.customerKey, name: 'Reports', type: 'JWT', returnUrls: [returnUrl] });
      const jwtApp = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
      assert.equal((await s.d.admin.post('/admin/policies/create', { customerKey: s.d.customerKey, applicationUuid: jwtApp, firstFactor: 'MAGIC_LINK' })).statusCode, 200);
      await s.page.goto(await inviteLink(s.d, s.person.username, s.person.email, jwtApp, returnUrl));
      await s.page.getByRole('button', { name: 'Continue to Reports' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(`${returnUrl}?id_token=`));
      const cookie = await ssoCookie(s);
      assert.ok(cookie);

      await s.page.goto(client.buildEndSessionUrl(s.a.config, { post_logout_redirect_uri: s.signedOut }).href);
      await s.page.getByRole('heading', { name: 'Sign out' }).waitFor();
      assert.ok(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value), 'nothing ended before the button');
      await s.page.getByRole('button', { name: 'Sign out' }).click();
      await s.page.waitForURL((url) => url.href.startsWith(s.signedOut));
      assert.equal(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value), undefined);
      assert.equal(await ssoCookie(s), undefined);
      assert.deepEqual(s.errors.filter((e) => /Content Security Policy/i.test(e)), []);
    });

    test('<issuer>/logout: a page with Sign out; pressing it ends the SSO and the provider session, and A needs a sign-in again', async (t) => {
      const s = await setting(t, kind);
      await signInToA(s);
      const cookie = await ssoCookie(s);
      assert.ok(cookie);
      const shown = await s.page.goto(`${s.d.issuer}/logout`);
      assert.equal(shown?.status(), 200);
      assert.equal(shown?.headers()['cache-control'], 'no-store');
      assert.ok(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value), 'a GET ends nothing');
      await s.page.getByRole('button', { name: 'Sign out' }).click();
      await s.page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      assert.equal(await ssoCookie(s), undefined);
      assert.equal(await s.d.composition.services.ssoSessions.current(s.d.customer.customerId, cookie.value), undefined);
      assert.equal(await authorize(s, s.a), undefined, 'A asks for a sign-in');
      // Another site's POST is refused (the SameSite=Lax cookie would not even be sent with it).
      const forgeries: Record<string, string>[] = [{ origin: s.d.app.origin }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }];
      for (const headers of forgeries) {
        const forged = await fetch(`${s.d.issuer}/logout`, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
        assert.equal(forged.status, 403, JSON.stringify(headers));
      }
      assert.equal((await fetch(`${s.d.url}/customers/999999/logout`)).status, 404);
    });
  });
}
