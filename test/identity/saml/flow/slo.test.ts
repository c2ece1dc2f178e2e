/**
 * Single logout: a LogoutRequest from the application (node-saml writes it) ends the SSO session and
 * answers a LogoutResponse to its sloUrl: by Redirect (signed in the query, checked by node-saml with
 * the metadata's certificate) from the browser itself; by POST, without the browser's cookie (a
 * cross-site POST), the session found by its SessionIndex. The next AuthnRequest asks for sign-in.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Browser } from '../../../helpers/relying-party.ts';
import { describeEachStore } from '../../../helpers/stores.ts';
import { createUser, deploy, PASSWORD, type Deployment, type TestUser } from '../../sign-in/helpers.ts';
import { assertRefused, createSamlApplication, formPost, postedForm, redirectRequest, responseXml, serviceProvider, type SamlApp } from './helpers.ts';

/** Signs `user` in through an SP-initiated request; the browser and what the Response says of the session. */
async function signedIn(d: Deployment, app: SamlApp, user: TestUser): Promise<{ browser: Browser; nameID: string; nameIDFormat: string; sessionIndex: string }> {
  const browser = new Browser();
  const held = await browser.fetch((await redirectRequest(serviceProvider(d, app))).url);
  const toSignIn = await browser.fetch(new URL(held.headers.get('location')!, d.url));
  const page = new URL(toSignIn.headers.get('location')!, d.url).href;
  await formPost(browser, page, { username: user.username });
  const done = await formPost(browser, page, { password: PASSWORD });
  const form = postedForm(await (await browser.fetch(done.headers.get('location')!)).text());
  assert.ok(form);
  const xml = responseXml(form);
  const nameId = /<(?:\w+:)?NameID[^>]*Format="([^"]+)"[^>]*>([^<]+)</.exec(xml);
  const sessionIndex = /SessionIndex="([^"]+)"/.exec(xml)?.[1];
  assert.ok(nameId && sessionIndex, xml);
  return { browser, nameIDFormat: nameId[1]!, nameID: nameId[2]!, sessionIndex };
}

async function asksToSignIn(d: Deployment, app: SamlApp, browser: Browser): Promise<boolean> {
  const held = await browser.fetch((await redirectRequest(serviceProvider(d, app))).url);
  if (held.status !== 303) return false;
  const next = await browser.fetch(new URL(held.headers.get('location')!, d.url));
  return next.status === 303 && /\/sign-in\//.test(next.headers.get('location') ?? '');
}

const metadataCertificate = async (d: Deployment) =>
  /<(?:\w+:)?X509Certificate>([^<]+)</.exec(await (await fetch(`${d.issuer}/saml/metadata`)).text())![1]!.replace(/\s/g, '');

describeEachStore('SAML identity provider: single logout', (kind) => {
  test('by Redirect from the browser: the session ends, the cookie is cleared, a signed LogoutResponse goes to the sloUrl', async (t) => {
    const d = await deploy(t, kind);
    const sloUrl = `${d.app.origin}/saml/slo`;
    const app = await createSamlApplication(d, { sloUrl });
    const user = await createUser(d);
    const { browser, ...profile } = await signedIn(d, app, user);

    const sp = serviceProvider(d, app, { idpCert: await metadataCertificate(d) });
    const logoutUrl = await sp.getLogoutUrlAsync({ issuer: app.entityId, ...profile }, 'after-logout', {});
    const answered = await browser.fetch(logoutUrl);
    assert.equal(answered.status, 303, await answered.text());
    assert.ok(answered.headers.getSetCookie().some((c) => /^lk_sso=;.*Max-Age=0/.test(c)));
    const location = new URL(answered.headers.get('location')!);
    assert.equal(`${location.origin}${location.pathname}`, sloUrl);
    assert.equal(location.searchParams.get('RelayState'), 'after-logout');
    // node-saml checks the query's signature with the metadata's certificate and reads the LogoutResponse.
    const checked = await sp.validateRedirectAsync(Object.fromEntries(location.searchParams), location.search.slice(1));
    assert.equal(checked.loggedOut, true);

    assert.equal(await asksToSignIn(d, app, browser), true);
  });

  test('by POST without the browser\'s cookie: the SessionIndex names the session to end; a signed LogoutResponse is posted to the sloUrl', async (t) => {
    const d = await deploy(t, kind);
    const sloUrl = `${d.app.origin}/saml/slo`;
    const app = await createSamlApplication(d, { sloUrl });
    const user = await createUser(d);
    const { browser, ...profile } = await signedIn(d, app, user);
    const other = await signedIn(d, app, user);

    const sp = serviceProvider(d, app);
    const request = await sp._generateLogoutRequest({ issuer: app.entityId, ...profile });
    const answered = await formPost(new Browser(), `${d.issuer}/saml/slo`, { SAMLRequest: Buffer.from(request).toString('base64'), RelayState: 'r' });
    const body = await answered.text();
    assert.equal(answered.status, 200, body);
    const form = postedForm(body);
    assert.ok(form);
    assert.equal(form.action, sloUrl);
    assert.equal(form.fields.RelayState, 'r');
    const xml = responseXml(form);
    assert.match(xml, /LogoutResponse/);
    assert.match(xml, /SignatureValue/);
    assert.match(xml, /urn:oasis:names:tc:SAML:2.0:status:Success/);

    assert.equal(await asksToSignIn(d, app, browser), true);
    // The user's session in another browser was not named: it goes on.
    assert.equal(await asksToSignIn(d, app, other.browser), false);
  });

  test('a SessionIndex with another user\'s NameID ends nothing; bad LogoutRequests are 400 pages; no sloUrl: a signed-out page', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const ada = await createUser(d);
    const bob = await createUser(d);
    const adaSession = await signedIn(d, app, ada);
    const bobSession = await signedIn(d, app, bob);
    const sp = serviceProvider(d, app);

    const mixed = await sp._generateLogoutRequest({ issuer: app.entityId, nameID: bobSession.nameID, nameIDFormat: bobSession.nameIDFormat, sessionIndex: adaSession.sessionIndex });
    const answered = await formPost(new Browser(), `${d.issuer}/saml/slo`, { SAMLRequest: Buffer.from(mixed).toString('base64') });
    const body = await answered.text();
    assert.equal(answered.status, 200, body);
    assert.match(body, /<h1>You are signed out<\/h1>/);
    assert.doesNotMatch(body, /<form/);
    assert.equal(await asksToSignIn(d, app, adaSession.browser), false);
    assert.equal(await asksToSignIn(d, app, bobSession.browser), false);

    const unknown = await sp._generateLogoutRequest({ issuer: 'https://unknown.example.test/sp', nameID: ada.email, nameIDFormat: adaSession.nameIDFormat });
    await assertRefused(await formPost(new Browser(), `${d.issuer}/saml/slo`, { SAMLRequest: Buffer.from(unknown.replace(app.entityId, 'https://unknown.example.test/sp')).toString('base64') }), /not registered/);
    await assertRefused(await new Browser().fetch(`${d.issuer}/saml/slo?SAMLRequest=bm9wZQ`));
    const withDoctype = `<!DOCTYPE x>${mixed}`;
    await assertRefused(await formPost(new Browser(), `${d.issuer}/saml/slo`, { SAMLRequest: Buffer.from(withDoctype).toString('base64') }), /DOCTYPE/);
  });
});
