/**
 * Bad AuthnRequests are a 400 page with no form, and nothing is posted anywhere, even for a browser
 * that has a session: an unknown issuer, an ACS URL that is not registered exactly (case, port,
 * trailing slash), a replayed request ID (also two at once), a request too old or from the future,
 * an unsigned or wrongly signed request when the application has a certificate, a DOCTYPE or an
 * external entity, a wrong Destination, a binding other than HTTP-POST.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { Browser } from '../../../helpers/relying-party.ts';
import { describeEachStore } from '../../../helpers/stores.ts';
import { deploy, type Deployment } from '../../sign-in/helpers.ts';
import {
  assertRefused, authnRequestXml, createSamlApplication, formPost, handWrittenRedirect, postRequest, redirectRequest, serviceProvider, spKeys,
} from './helpers.ts';

/** A browser that has the SSO cookie of nobody in particular: refusals must not depend on a session. */
const browser = () => new Browser();

async function deployed(t: Parameters<typeof deploy>[0], kind: Parameters<typeof deploy>[1]): Promise<Deployment> {
  return deploy(t, kind);
}

describeEachStore('SAML identity provider: refused requests', (kind) => {
  test('unknown issuer; ACS URL variants; wrong Destination; another binding; nothing posted', async (t) => {
    const d = await deployed(t, kind);
    const acs = `${d.app.origin}/saml/acs`;
    const app = await createSamlApplication(d, { acsUrls: [acs] });

    await assertRefused(await browser().fetch((await redirectRequest(serviceProvider(d, { ...app, entityId: 'https://unknown.example.test/sp' }))).url), /not registered/);
    const port = new URL(acs).port;
    const variants = [
      acs.replace('/saml/acs', '/SAML/acs'),
      acs.replace('localhost', 'LOCALHOST'),
      `${acs}/`,
      acs.replace(`:${port}`, `:${Number(port) + 1}`),
      acs.replace('http:', 'https:'),
      `${acs}?x=1`,
    ];
    for (const variant of variants) {
      await assertRefused(await browser().fetch((await redirectRequest(serviceProvider(d, app, { acsUrl: variant }))).url), /AssertionConsumerServiceURL/);
      await assertRefused(await formPost(browser(), `${d.issuer}/saml/sso`, (await postRequest(serviceProvider(d, app, { acsUrl: variant }))).fields), /AssertionConsumerServiceURL/);
    }
    await assertRefused(await browser().fetch((await redirectRequest(serviceProvider(d, app, { entryPoint: `${d.issuer}/saml/sso/` }))).url), /Destination/);
    const artifact = authnRequestXml(app, d).replace('bindings:HTTP-POST', 'bindings:HTTP-Artifact');
    await assertRefused(await browser().fetch(handWrittenRedirect(d, artifact)), /binding/);
    const byIndex = authnRequestXml(app, d).replace(/AssertionConsumerServiceURL="[^"]*"/, 'AssertionConsumerServiceIndex="0"');
    await assertRefused(await browser().fetch(handWrittenRedirect(d, byIndex)), /by index/);
    // Nothing at all, or not deflated.
    await assertRefused(await browser().fetch(`${d.issuer}/saml/sso`));
    await assertRefused(await browser().fetch(`${d.issuer}/saml/sso?SAMLRequest=bm90IGRlZmxhdGVk`));
    await assertRefused(await formPost(browser(), `${d.issuer}/saml/sso`, { SAMLRequest: '%%%' }));
    // The hand-written request itself is fine: the refusals above are for what they changed.
    assert.equal((await browser().fetch(handWrittenRedirect(d, authnRequestXml(app, d)))).status, 303);
  });

  test('a request ID is answered once: a replay is refused, and of two at once only one is held', async (t) => {
    const d = await deployed(t, kind);
    const app = await createSamlApplication(d);
    const { url } = await redirectRequest(serviceProvider(d, app));
    assert.equal((await browser().fetch(url)).status, 303);
    await assertRefused(await browser().fetch(url), /already been answered/);

    const { fields } = await postRequest(serviceProvider(d, app));
    const both = await Promise.all([formPost(browser(), `${d.issuer}/saml/sso`, fields), formPost(browser(), `${d.issuer}/saml/sso`, fields)]);
    assert.deepEqual(both.map((r) => r.status).sort(), [303, 400]);
    await assertRefused(both.find((r) => r.status === 400)!, /already been answered/);
  });

  test('a request too old, or issued too far in the future, is refused', async (t) => {
    const d = await deployed(t, kind);
    const app = await createSamlApplication(d);
    const { url } = await redirectRequest(serviceProvider(d, app));
    d.clock.advance(6 * 60_000);
    await assertRefused(await browser().fetch(url), /too old/);
    const ahead = new Date(d.clock.now() + 10 * 60_000).toISOString();
    await assertRefused(await browser().fetch(handWrittenRedirect(d, authnRequestXml(app, d, { issueInstant: ahead }))), /future/);
    const behind = new Date(d.clock.now() - 6 * 60_000).toISOString();
    await assertRefused(await browser().fetch(handWrittenRedirect(d, authnRequestXml(app, d, { issueInstant: behind }))), /too old/);
  });

  test('with a certificate: unsigned and wrongly signed requests are refused by either binding; rightly signed ones are held', async (t) => {
    const d = await deployed(t, kind);
    const keys = await spKeys();
    const other = await spKeys();
    const app = await createSamlApplication(d, { spCertificate: keys.certificatePem });

    await assertRefused(await browser().fetch((await redirectRequest(serviceProvider(d, app))).url), /not signed/);
    await assertRefused(await formPost(browser(), `${d.issuer}/saml/sso`, (await postRequest(serviceProvider(d, app))).fields), /not signed/);
    await assertRefused(await browser().fetch((await redirectRequest(serviceProvider(d, app, { keys: other }))).url), /does not verify/);
    await assertRefused(await formPost(browser(), `${d.issuer}/saml/sso`, (await postRequest(serviceProvider(d, app, { keys: other }))).fields), /does not verify/);
    // A signed query with its SAMLRequest swapped for another request of the same SP.
    const signed = new URL((await redirectRequest(serviceProvider(d, app, { keys }))).url);
    signed.searchParams.set('SAMLRequest', new URL((await redirectRequest(serviceProvider(d, app))).url).searchParams.get('SAMLRequest')!);
    await assertRefused(await browser().fetch(signed), /does not verify/);

    assert.equal((await browser().fetch((await redirectRequest(serviceProvider(d, app, { keys }))).url)).status, 303);
    assert.equal((await formPost(browser(), `${d.issuer}/saml/sso`, (await postRequest(serviceProvider(d, app, { keys }))).fields)).status, 303);
  });

  test('a DOCTYPE or an external entity is refused by either binding, before anything is looked up', async (t) => {
    const d = await deployed(t, kind);
    const app = await createSamlApplication(d);
    const attacks = [
      authnRequestXml(app, d, { prolog: '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>', issuer: '&x;' }),
      authnRequestXml(app, d, { prolog: '<!DOCTYPE samlp:AuthnRequest>' }),
      authnRequestXml(app, d, { prolog: '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>', issuer: '&b;' }),
    ];
    for (const xml of attacks) {
      await assertRefused(await browser().fetch(handWrittenRedirect(d, xml)), /DOCTYPE/);
      await assertRefused(await formPost(browser(), `${d.issuer}/saml/sso`, { SAMLRequest: Buffer.from(xml).toString('base64') }), /DOCTYPE/);
    }
    // Deflated to more than the parser accepts: refused without inflating it all.
    const bomb = deflateRawSync(Buffer.from(authnRequestXml(app, d).replace('</samlp:AuthnRequest>', `<x>${' '.repeat(5_000_000)}</x></samlp:AuthnRequest>`)));
    await assertRefused(await browser().fetch(`${d.issuer}/saml/sso?SAMLRequest=${encodeURIComponent(bomb.toString('base64'))}`));
  });
});
