/**
 * Latchkey as a SAML identity provider, proven with a service provider it does not use itself:
 * @node-saml/node-saml configured only from Latchkey's metadata (service-provider.ts), in Debian's
 * Chromium through playwright-core, on both stores. xmlsec1 checks the signatures of the Responses the
 * browser carried. Skips saying why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { ValidateInResponseTo } from '@node-saml/node-saml';
import type { Page } from 'playwright-core';
import { startSmtpSink, type SmtpSink } from '../../../helpers/smtp-sink.ts';
import { describeEachStore } from '../../../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../../console/browser.ts';
import { createUser, deploy, signInWithPassword, type Deployment, type TestUser } from '../../sign-in/helpers.ts';
import {
  decodeResponse, NAME_ID_FORMATS, spSigningKey, startServiceProvider, type ServiceProvider, type ServiceProviderOptions, type SignedInProfile,
} from './service-provider.ts';

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(async () => { await closeBrowser(); await sink?.stop(); });

const customerKey = (d: Deployment) => Number(d.customer.customerKey);

/** The IdP's clock is the test's; node-saml reads the real one. Keep them together before each exchange. */
function syncClock(d: Deployment): void {
  d.clock.set(Math.max(d.clock.now(), Date.now()));
}

/** A service provider (node-saml, from `<issuer>/saml/metadata`) and its application in Latchkey with a login policy (PASSWORD unless said). */
async function registeredSp(
  t: TestContext, d: Deployment, name: string,
  options: Omit<ServiceProviderOptions, 'metadataUrl'> & { fromMetadata?: boolean; firstFactor?: 'PASSWORD' | 'MAGIC_LINK' } = {},
): Promise<ServiceProvider & { uuid: string }> {
  const sp = await startServiceProvider(t, { metadataUrl: `${d.issuer}/saml/metadata`, ...options });
  const fields = options.fromMetadata
    ? { spMetadata: await (await fetch(`${sp.origin}/metadata`)).text(), ...(options.nameIdFormat ? { nameIdFormat: options.nameIdFormat } : {}) }
    : { entityId: sp.entityId, acsUrls: [sp.acsUrl], ...(options.nameIdFormat ? { nameIdFormat: options.nameIdFormat } : {}), ...(options.signing ? { spCertificate: options.signing.certificatePem } : {}) };
  const created = await d.admin.post('/admin/applications/create', { customerKey: customerKey(d), name, type: 'SAML', ...fields });
  assert.equal(created.statusCode, 200, created.body);
  const uuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
  const policy = await d.admin.post('/admin/policies/create', { customerKey: customerKey(d), applicationUuid: uuid, firstFactor: options.firstFactor ?? 'PASSWORD', secondFactor: 'NONE' });
  assert.equal(policy.statusCode, 200, policy.body);
  return { ...sp, uuid };
}

/** A page whose script errors and CSP violations (the auto-submit script, the form's target) are kept. */
async function watchedPage(t: TestContext): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser(t)).newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  return { page, errors };
}

/** Opens the SP's login, which sends the browser to Latchkey with an AuthnRequest by that binding. */
async function startAt(page: Page, d: Deployment, sp: ServiceProvider, binding: 'redirect' | 'post', relay = ''): Promise<void> {
  syncClock(d);
  await page.goto(`${sp.origin}/login?binding=${binding}&relay=${encodeURIComponent(relay)}`);
}

/** Waits for the SP's page after the Response was posted to it; the profile node-saml validated. */
async function signedIn(page: Page, sp: ServiceProvider): Promise<SignedInProfile> {
  // Either the SP's page, or Latchkey's 400 page (said in the failure).
  await Promise.race([
    page.waitForURL(sp.acsUrl),
    page.getByRole('heading', { name: 'This sign-in request is not valid' }).waitFor(),
  ]);
  assert.equal(page.url(), sp.acsUrl, `not posted to the SP: ${await page.locator('body').textContent()}`);
  const heading = await page.getByRole('heading').first().textContent();
  assert.equal(heading, 'Signed in', `the SP refused: ${await page.locator('body').textContent()}`);
  return JSON.parse((await page.locator('#profile').textContent())!) as SignedInProfile;
}

async function userInTwoGroups(d: Deployment): Promise<TestUser> {
  const groups = await d.admin.post('/admin/groups/update', {
    customerKey: customerKey(d), groups: [{ groupName: 'Engineering', isDefault: false }, { groupName: 'Finance', isDefault: false }],
  });
  assert.equal(groups.statusCode, 200, groups.body);
  return createUser(d, { groups: ['Engineering', 'Finance'] });
}

function assertProfile(profile: SignedInProfile, d: Deployment, user: TestUser, expected: { nameIDFormat: string; relayState: string | undefined }): void {
  assert.equal(profile.issuer, d.issuer);
  assert.equal(profile.nameIDFormat, expected.nameIDFormat);
  assert.deepEqual(
    [profile.email, profile.username, profile.firstName, profile.lastName, [...profile.groups].sort(), profile.relayState],
    [user.email, user.username, 'Ada', 'Lovelace', ['Engineering', 'Finance'], expected.relayState],
  );
  assert.ok(profile.sessionIndex, 'an AuthnStatement SessionIndex');
}

/** The magic link in the latest mail to `email` (the outbox drained once). */
async function mailedLink(d: Deployment, email: string): Promise<string> {
  await d.composition.mailWorker.runOnce();
  for (let i = 0; i < 50; i++) {
    const mail = [...sink.messages].reverse().find((m) => m.envelope.to.includes(email));
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail?.parsed.text ?? '')?.[0];
    if (link) return link;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no magic link mailed to ${email}`);
}

/** xmlsec1 verifies one signature of the Response XML, from the metadata's certificate alone. */
function xmlsecVerifies(xml: string, certificatePem: string, signature: 'Response' | 'Assertion'): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-xmlsec-'));
  writeFileSync(join(dir, 'response.xml'), xml);
  writeFileSync(join(dir, 'idp.pem'), certificatePem);
  const xpath = signature === 'Response'
    ? "/*[local-name()='Response']/*[local-name()='Signature']"
    : "/*[local-name()='Response']/*[local-name()='Assertion']/*[local-name()='Signature']";
  try {
    execFileSync('xmlsec1', [
      '--verify', '--pubkey-cert-pem', join(dir, 'idp.pem'), '--enabled-key-data', 'rsa,x509',
      '--id-attr:ID', 'urn:oasis:names:tc:SAML:2.0:protocol:Response', '--id-attr:ID', 'urn:oasis:names:tc:SAML:2.0:assertion:Assertion',
      '--node-xpath', xpath, join(dir, 'response.xml'),
    ], { stdio: 'pipe' });
    return true;
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '');
    if (/ENOENT/.test(String(error))) throw error;
    if (!/FAIL|verification failed|failed/i.test(stderr)) throw new Error(`xmlsec1: ${stderr}`);
    return false;
  }
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('SAML browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('SAML browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('SAML identity provider with a real service provider in a browser', (kind) => {
    test('SP-initiated by HTTP-Redirect: the sign-in page, then node-saml accepts the Response (NameID, attributes, groups, RelayState); a second application registered from its metadata signs in by HTTP-POST with the session, no sign-in page; xmlsec1 verifies both signatures', async (t) => {
      const d = await deploy(t, kind);
      const user = await userInTwoGroups(d);
      const wiki = await registeredSp(t, d, 'Wiki');
      const crm = await registeredSp(t, d, 'CRM', { fromMetadata: true, nameIdFormat: 'persistent', signing: await spSigningKey('crm.example.test') });
      const { page, errors } = await watchedPage(t);

      await startAt(page, d, wiki, 'redirect', 'back/to?page=1&x=é');
      await page.getByLabel('Username or e-mail').waitFor();
      assert.ok(page.url().startsWith(`${d.issuer}/`), page.url());
      await signInWithPassword(page, user.username);
      const profile = await signedIn(page, wiki);
      assertProfile(profile, d, user, { nameIDFormat: NAME_ID_FORMATS.emailAddress, relayState: 'back/to?page=1&x=é' });
      assert.equal(profile.nameID, user.email);

      // Another application of the customer: the session answers, no page is shown.
      const shown: string[] = [];
      page.on('framenavigated', (frame) => { if (frame === page.mainFrame()) shown.push(frame.url()); });
      await startAt(page, d, crm, 'post', 'crm-state');
      const crmProfile = await signedIn(page, crm);
      assertProfile(crmProfile, d, user, { nameIDFormat: NAME_ID_FORMATS.persistent, relayState: 'crm-state' });
      assert.equal(shown.some((url) => url.includes('/sign-in/')), false, `a sign-in page was shown: ${shown.join(' ')}`);
      assert.doesNotMatch(crmProfile.nameID, new RegExp([user.email, user.username, `^${user.id}$`].join('|')));

      for (const [sp, response] of [[wiki, wiki.responses.at(-1)!], [crm, crm.responses.at(-1)!]] as const) {
        const xml = decodeResponse(response.samlResponse);
        assert.equal(xmlsecVerifies(xml, sp.idp.certificatePem, 'Response'), true, 'the Response signature');
        assert.equal(xmlsecVerifies(xml, sp.idp.certificatePem, 'Assertion'), true, 'the Assertion signature');
        // The same check fails once one signed byte changed: xmlsec1 really verifies.
        const tampered = xml.replace(user.username, `${user.username.slice(0, -1)}${user.username.endsWith('x') ? 'y' : 'x'}`);
        assert.notEqual(tampered, xml);
        assert.equal(xmlsecVerifies(tampered, sp.idp.certificatePem, 'Assertion'), false, 'xmlsec1 refuses a changed Assertion');
      }
      assert.deepEqual(errors, [], 'no script error or CSP violation on the way');
    });

    test('SP-initiated by HTTP-POST: the sign-in page, then node-saml accepts the Response; a signed HTTP-Redirect request of another application signs in with the session; the persistent NameID is the same on two sign-ins and differs between two applications', async (t) => {
      const d = await deploy(t, kind);
      const user = await userInTwoGroups(d);
      const portal = await registeredSp(t, d, 'Portal', { nameIdFormat: 'persistent' });
      const ledger = await registeredSp(t, d, 'Ledger', { nameIdFormat: 'persistent', signing: await spSigningKey('ledger.example.test') });

      const first = await (await browser(t)).newPage();
      await startAt(first, d, portal, 'post', 'p1');
      await first.getByLabel('Username or e-mail').waitFor();
      await signInWithPassword(first, user.username);
      const portalProfile = await signedIn(first, portal);
      assertProfile(portalProfile, d, user, { nameIDFormat: NAME_ID_FORMATS.persistent, relayState: 'p1' });
      assert.ok(decodeResponse(portal.responses.at(-1)!.samlResponse).includes(`InResponseTo="${portal.requestIds.at(-1)}"`));

      await startAt(first, d, ledger, 'redirect', 'l1');
      const ledgerProfile = await signedIn(first, ledger);
      assert.equal(ledgerProfile.relayState, 'l1');
      assert.notEqual(ledgerProfile.nameID, portalProfile.nameID, 'one persistent NameID per application');

      // Another browser, another session, another sign-in: the same identifier for the same application.
      const second = await (await browser(t)).newPage();
      await startAt(second, d, portal, 'redirect');
      await signInWithPassword(second, user.username);
      assert.equal((await signedIn(second, portal)).nameID, portalProfile.nameID);
    });

    test('a magic link to a SAML application: the landing posts an unsolicited Response that node-saml accepts', async (t) => {
      const d = await deploy(t, kind, { LATCHKEY_SMTP_URL: sink.url });
      const user = await userInTwoGroups(d);
      const sp = await registeredSp(t, d, 'Helpdesk', { validateInResponseTo: ValidateInResponseTo.never, firstFactor: 'MAGIC_LINK' });
      const generated = await d.admin.post('/admin/magiclink/generate', { customerKey: customerKey(d), username: user.username, applicationUuid: sp.uuid });
      assert.equal(generated.statusCode, 200, generated.body);
      const link = await mailedLink(d, user.email);

      const { page, errors } = await watchedPage(t);
      syncClock(d);
      await page.goto(link);
      await page.getByRole('button', { name: 'Continue to Helpdesk' }).click();
      const profile = await signedIn(page, sp);
      assertProfile(profile, d, user, { nameIDFormat: NAME_ID_FORMATS.emailAddress, relayState: undefined });
      assert.equal(profile.nameID, user.email);
      assert.doesNotMatch(decodeResponse(sp.responses.at(-1)!.samlResponse), /InResponseTo=/, 'unsolicited: answers no request');
      assert.deepEqual(errors, [], 'no script error or CSP violation on the way (the landing\'s form-action allows the ACS URL)');
    });

    test('a Response whose signature was broken on its way is refused by node-saml; the same flow untouched is accepted', async (t) => {
      const d = await deploy(t, kind);
      const user = await userInTwoGroups(d);
      const sp = await registeredSp(t, d, 'Payroll');
      const page = await (await browser(t)).newPage();
      let tampered = 0;
      await page.route(sp.acsUrl, async (route) => {
        const form = new URLSearchParams(route.request().postData() ?? '');
        const xml = decodeResponse(form.get('SAMLResponse') ?? '');
        // One byte of the signed Assertion: the user's first name in its attribute.
        const changed = xml.replace('>Ada<', '>Adb<');
        assert.notEqual(changed, xml, 'the attribute is in the Response');
        form.set('SAMLResponse', Buffer.from(changed, 'utf8').toString('base64'));
        tampered++;
        await route.continue({ postData: form.toString() });
      });
      await startAt(page, d, sp, 'redirect');
      await signInWithPassword(page, user.username);
      await page.waitForURL(sp.acsUrl);
      await page.getByRole('heading', { name: 'Refused' }).waitFor();
      assert.match(await page.getByRole('alert').textContent() ?? '', /signature/i);
      assert.equal(tampered, 1);

      await page.unroute(sp.acsUrl);
      await startAt(page, d, sp, 'redirect');
      assert.equal((await signedIn(page, sp)).firstName, 'Ada');
    });

    test('single logout from node-saml by HTTP-Redirect: a signed LogoutResponse that node-saml accepts, and the next AuthnRequest shows the sign-in page', async (t) => {
      const d = await deploy(t, kind);
      const user = await userInTwoGroups(d);
      const sp = await registeredSp(t, d, 'Calendar', { fromMetadata: true });
      const page = await (await browser(t)).newPage();
      await startAt(page, d, sp, 'redirect');
      await signInWithPassword(page, user.username);
      await signedIn(page, sp);

      syncClock(d);
      await page.goto(`${sp.origin}/logout`);
      await page.waitForURL((url) => url.href.startsWith(`${sp.origin}/slo?`));
      assert.equal(await page.getByRole('heading').first().textContent(), 'Signed out', await page.locator('body').textContent() ?? '');
      const answer = new URLSearchParams(sp.logoutResponses.at(-1));
      assert.deepEqual([answer.has('SAMLResponse'), answer.get('SigAlg'), answer.has('Signature'), answer.get('RelayState')],
        [true, 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', true, 'bye']);

      await startAt(page, d, sp, 'post');
      await page.getByLabel('Username or e-mail').waitFor();
      assert.ok(page.url().startsWith(`${d.issuer}/`), page.url());
      assert.equal(sp.responses.length, 1, 'nothing posted to the SP');
    });

    test('disabling the user ends the SAML session: the next AuthnRequest shows the sign-in page and nothing is posted', async (t) => {
      const d = await deploy(t, kind);
      const user = await userInTwoGroups(d);
      const sp = await registeredSp(t, d, 'Intranet');
      const page = await (await browser(t)).newPage();
      await startAt(page, d, sp, 'redirect');
      await signInWithPassword(page, user.username);
      await signedIn(page, sp);
      await startAt(page, d, sp, 'post');
      await signedIn(page, sp);
      assert.equal(sp.responses.length, 2);

      const disabled = await d.admin.post('/admin/users/disable', { customerKey: customerKey(d), username: user.username });
      assert.equal(disabled.statusCode, 200, disabled.body);
      d.clock.advance(2_000);
      await page.goto(`${sp.origin}/login?binding=redirect`);
      await page.getByLabel('Username or e-mail').waitFor();
      assert.ok(page.url().startsWith(`${d.issuer}/`), page.url());
      assert.equal(sp.responses.length, 2, 'nothing posted to the SP');
    });
  });
}
