/**
 * The SAML identity provider over real sockets, the test playing the browser (a cookie jar honouring
 * Path) and a node-saml service provider writing the requests: the metadata; an SP-initiated sign-in
 * by either binding (no session: the sign-in, then the form; with one: the form at once) whose Response
 * answers the request; IdP-initiated sign-ins (?app= and an INVITE magic link); ForceAuthn; a disabled
 * user asked to sign in again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Browser } from '../../../helpers/relying-party.ts';
import { startSmtpSink, type SmtpSink } from '../../../helpers/smtp-sink.ts';
import { describeEachStore } from '../../../helpers/stores.ts';
import { createUser, deploy, mailedCode, PASSWORD, type Deployment, type TestUser } from '../../sign-in/helpers.ts';
import { createSamlApplication, formPost, postedForm, postRequest, redirectRequest, responseXml, serviceProvider, type SamlApp } from './helpers.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await sink?.stop(); });

/** The sign-in page's two steps, posted as the browser would; the location it sends the browser back to. */
async function signIn(browser: Browser, d: Deployment, signInLocation: string, user: TestUser): Promise<string> {
  const page = new URL(signInLocation, d.url).href;
  assert.equal((await formPost(browser, page, { username: user.username })).status, 200);
  const done = await formPost(browser, page, { password: PASSWORD });
  assert.equal(done.status, 303, await done.text());
  return done.headers.get('location')!;
}

/** From a response sending the browser on: follows GETs until a page (the form, a sign-in page). */
async function follow(browser: Browser, d: Deployment, response: Response): Promise<Response> {
  let current = response;
  for (let hop = 0; hop < 5 && current.status === 303; hop++) {
    const location = new URL(current.headers.get('location')!, d.url);
    if (location.pathname.includes('/sign-in/')) return current;
    current = await browser.fetch(location);
  }
  return current;
}

async function formOf(response: Response): Promise<{ action: string; fields: Record<string, string> }> {
  const body = await response.text();
  assert.equal(response.status, 200, body);
  const form = postedForm(body);
  assert.ok(form, body);
  assert.match(body, /<button type="submit">Continue<\/button>/);
  return form;
}

/** A browser signed in to the customer through an SP-initiated Redirect sign-in of `app`. */
async function signedInBrowser(d: Deployment, app: SamlApp, user: TestUser): Promise<Browser> {
  const browser = new Browser();
  const { url } = await redirectRequest(serviceProvider(d, app));
  const toSignIn = await follow(browser, d, await browser.fetch(url));
  const back = await signIn(browser, d, toSignIn.headers.get('location')!, user);
  await formOf(await browser.fetch(back));
  return browser;
}

describeEachStore('SAML identity provider: sign-in', (kind) => {
  test('the metadata: public, cacheable, the issuer as entityID, the certificate, SSO by both bindings and SLO', async (t) => {
    const d = await deploy(t, kind);
    const response = await fetch(`${d.issuer}/saml/metadata`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/samlmetadata\+xml/);
    assert.match(response.headers.get('cache-control') ?? '', /public, max-age=\d+/);
    const xml = await response.text();
    assert.ok(xml.includes(`entityID="${d.issuer}"`), xml);
    assert.match(xml, /<(\w+:)?X509Certificate>[A-Za-z0-9+/=\s]{200,}<\/(\w+:)?X509Certificate>/);
    assert.ok(xml.includes(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${d.issuer}/saml/sso"`), xml);
    assert.ok(xml.includes(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${d.issuer}/saml/sso"`), xml);
    assert.ok(xml.includes(`${d.issuer}/saml/slo`), xml);
    // The same bytes again (every node serves the same certificate for the key).
    assert.equal(await (await fetch(`${d.issuer}/saml/metadata`)).text(), xml);
    assert.equal((await fetch(`${d.url}/customers/99999999/saml/metadata`)).status, 404);
  });

  test('SP-initiated by Redirect without a session: the sign-in, then a form posting the Response and RelayState to the ACS URL', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const user = await createUser(d);
    const browser = new Browser();
    const { url, id } = await redirectRequest(serviceProvider(d, app), 'back-to/page?x=1');

    const held = await browser.fetch(url);
    assert.equal(held.status, 303);
    assert.match(held.headers.get('location') ?? '', /\/saml\/continue\/[A-Za-z0-9_-]{43}$/);
    const toSignIn = await follow(browser, d, held);
    assert.match(toSignIn.headers.get('location') ?? '', /\/sign-in\/[A-Za-z0-9_-]{43}$/);
    const back = await signIn(browser, d, toSignIn.headers.get('location')!, user);
    assert.match(back, /\/saml\/continue\//);

    const answer = await browser.fetch(back);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    const csp = answer.headers.get('content-security-policy') ?? '';
    assert.ok(csp.includes(`form-action 'self' ${d.app.origin}`), csp);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
    const form = await formOf(answer);
    assert.equal(form.action, app.acsUrls[0]);
    assert.equal(form.fields.RelayState, 'back-to/page?x=1');
    const xml = responseXml(form);
    assert.ok(xml.includes(`InResponseTo="${id}"`), xml);
    assert.ok(xml.includes(`Destination="${app.acsUrls[0]}"`), xml);
    assert.match(xml, new RegExp(`<(\\w+:)?Audience>${app.entityId.replace(/[.?]/g, '\\$&')}</(\\w+:)?Audience>`));
    assert.ok(xml.includes(`>${user.email}</`), 'emailAddress NameID');
    assert.match(xml, /urn:oasis:names:tc:SAML:2.0:status:Success/);
    // The held request is spent: the continue URL answers nothing twice.
    const again = await browser.fetch(back);
    assert.equal(again.status, 410);
    assert.doesNotMatch(await again.text(), /<form/);
  });

  test('SP-initiated by POST with a session: the form at once; a continue URL opened in another browser answers nothing', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const user = await createUser(d);
    const browser = await signedInBrowser(d, app, user);

    const { fields, id } = await postRequest(serviceProvider(d, app), 'state-2');
    const form = await formOf(await formPost(browser, `${d.issuer}/saml/sso`, fields));
    assert.equal(form.fields.RelayState, 'state-2');
    assert.ok(responseXml(form).includes(`InResponseTo="${id}"`));

    // Held for another browser (no session): its continue URL is bound to that browser.
    const other = new Browser();
    const held = await formPost(other, `${d.issuer}/saml/sso`, (await postRequest(serviceProvider(d, app))).fields);
    assert.equal(held.status, 303);
    const continued = await browser.fetch(new URL(held.headers.get('location')!, d.url));
    assert.equal(continued.status, 410);
    assert.doesNotMatch(await continued.text(), /<form/);
  });

  test('IdP-initiated ?app=: with a session an unsolicited Response to the default ACS URL; without, the sign-in first; unknown apps refused', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d, { acsUrls: [`${d.app.origin}/acs/default`, `${d.app.origin}/acs/other`], nameIdFormat: 'persistent' });
    const user = await createUser(d);
    const browser = await signedInBrowser(d, app, user);

    const form = await formOf(await browser.fetch(`${d.issuer}/saml/sso?app=${app.uuid}`));
    assert.equal(form.action, `${d.app.origin}/acs/default`);
    assert.equal(form.fields.RelayState, undefined);
    const xml = responseXml(form);
    assert.doesNotMatch(xml, /InResponseTo=/);
    // persistent: opaque, the same at every sign-in, not the e-mail or the username.
    const nameId = /<(?:\w+:)?NameID[^>]*persistent[^>]*>([^<]+)</.exec(xml)?.[1];
    assert.ok(nameId && !nameId.includes(user.username) && !nameId.includes('@'), xml);
    const again = responseXml(await formOf(await browser.fetch(`${d.issuer}/saml/sso?app=${app.uuid}`)));
    assert.ok(again.includes(`>${nameId}<`));

    const stranger = new Browser();
    const toSignIn = await follow(stranger, d, await stranger.fetch(`${d.issuer}/saml/sso?app=${app.uuid}`));
    const back = await signIn(stranger, d, toSignIn.headers.get('location')!, user);
    assert.equal((await formOf(await stranger.fetch(back))).action, `${d.app.origin}/acs/default`);

    for (const bad of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const refused = await browser.fetch(`${d.issuer}/saml/sso?app=${bad}`);
      assert.equal(refused.status, 400);
      assert.doesNotMatch(await refused.text(), /<form/);
    }
  });

  test('an INVITE magic link to a SAML application ends in the form posting an unsolicited Response', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
    const app = await createSamlApplication(d, { firstFactor: 'MAGIC_LINK' });
    const user = await createUser(d);
    const generated = await d.admin.post('/admin/magiclink/generate', { customerKey: Number(d.customer.customerKey), username: user.username, applicationUuid: app.uuid });
    assert.equal(generated.statusCode, 200, generated.body);
    const browser = new Browser();
    const landed = await browser.fetch(await mailedLink(d, user.email), { method: 'POST' });
    const form = await formOf(landed);
    assert.ok((landed.headers.get('content-security-policy') ?? '').includes(`form-action 'self' ${d.app.origin}`));
    assert.equal(form.action, app.acsUrls[0]);
    const xml = responseXml(form);
    assert.doesNotMatch(xml, /InResponseTo=/);
    assert.ok(xml.includes(`>${user.email}</`));
    // The landing opened the SSO session: the application's next request is answered at once.
    assert.ok((await formOf(await browser.fetch((await redirectRequest(serviceProvider(d, app))).url))).fields.SAMLResponse);
  });

  test('ForceAuthn asks to sign in again although the browser has a session', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const user = await createUser(d);
    const browser = await signedInBrowser(d, app, user);
    const { url, id } = await redirectRequest(serviceProvider(d, app, { forceAuthn: true }));
    const toSignIn = await follow(browser, d, await browser.fetch(url));
    assert.match(toSignIn.headers.get('location') ?? '', /\/sign-in\//);
    const back = await signIn(browser, d, toSignIn.headers.get('location')!, user);
    assert.ok(responseXml(await formOf(await browser.fetch(back))).includes(`InResponseTo="${id}"`));
  });

  test('IsPassive: with a session the Response; without one a page, never the sign-in, and nothing posted', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const user = await createUser(d);
    const stranger = new Browser();
    const refused = await follow(stranger, d, await stranger.fetch((await redirectRequest(serviceProvider(d, app, { passive: true }))).url));
    const body = await refused.text();
    assert.equal(refused.status, 200, body);
    assert.match(body, /<h1>You are not signed in<\/h1>/);
    assert.doesNotMatch(body, /<form/);

    const browser = await signedInBrowser(d, app, user);
    const { url, id } = await redirectRequest(serviceProvider(d, app, { passive: true }));
    assert.ok(responseXml(await formOf(await browser.fetch(url))).includes(`InResponseTo="${id}"`));
  });

  test('a MAGIC_LINK policy: the mailed code, or the mailed link in the same browser, answers the held request', async (t) => {
    const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
    const app = await createSamlApplication(d, { firstFactor: 'MAGIC_LINK' });
    const user = await createUser(d);

    const byCode = new Browser();
    const first = await redirectRequest(serviceProvider(d, app), 'by-code');
    const page = new URL((await follow(byCode, d, await byCode.fetch(first.url))).headers.get('location')!, d.url).href;
    assert.equal((await formPost(byCode, page, { username: user.username })).status, 200);
    const { code } = await mailedCode(d, sink, user.email);
    const done = await formPost(byCode, page, { code });
    assert.equal(done.status, 303);
    const form = await formOf(await byCode.fetch(done.headers.get('location')!));
    assert.equal(form.fields.RelayState, 'by-code');
    assert.ok(responseXml(form).includes(`InResponseTo="${first.id}"`));

    const byLink = new Browser();
    const second = await redirectRequest(serviceProvider(d, app), 'by-link');
    const secondPage = new URL((await follow(byLink, d, await byLink.fetch(second.url))).headers.get('location')!, d.url).href;
    await formPost(byLink, secondPage, { username: user.username });
    const { link } = await mailedCode(d, sink, user.email);
    const landed = await byLink.fetch(link, { method: 'POST' });
    assert.equal(landed.status, 303);
    assert.match(landed.headers.get('location') ?? '', /\/saml\/continue\//);
    const linked = await formOf(await byLink.fetch(landed.headers.get('location')!));
    assert.equal(linked.fields.RelayState, 'by-link');
    assert.ok(responseXml(linked).includes(`InResponseTo="${second.id}"`));
  });

  test('disabling the user ends the SAML session: the next AuthnRequest asks for sign-in again', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const user = await createUser(d);
    const browser = await signedInBrowser(d, app, user);
    const disabled = await d.admin.post('/admin/users/disable', { customerKey: Number(d.customer.customerKey), username: user.username });
    assert.equal(disabled.statusCode, 200, disabled.body);
    const next = await follow(browser, d, await browser.fetch((await redirectRequest(serviceProvider(d, app))).url));
    assert.equal(next.status, 303);
    assert.match(next.headers.get('location') ?? '', /\/sign-in\/[A-Za-z0-9_-]{43}$/);
  });
});

/** The link of the mail to `email` (the real SMTP sink). */
async function mailedLink(d: Deployment, email: string): Promise<string> {
  await d.composition.mailWorker.runOnce();
  for (let i = 0; i < 100; i++) {
    const mail = sink.messages.find((m) => m.envelope.to.includes(email));
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail?.parsed.text ?? '')?.[0];
    if (link) return link;
    await sink.waitFor(sink.messages.length + 1, 100).catch(() => {});
  }
  throw new Error(`no mail to ${email}`);
}
