/**
 * Refused passkeys in the audit log, on both stores, with assertions Chromium's virtual authenticator
 * really made: at the hosted sign-in's first factor (an expired challenge, a replayed assertion: no
 * user named, so nobody is the target) and second factor (another user's credential, a foreign
 * origin, no user verification: the flow's user is actor and target), and at the magic-link
 * landing's second factor. Each refusal is one signin.failed, as a wrong password or code is. And a
 * passkey enrolled on the way in is the user's own user.passkey.added.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { SYSTEM } from '../../src/audit/context.ts';
import type { AuditEvent } from '../../src/audit/types.ts';
import { Browser } from '../helpers/relying-party.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, closeBrowser, findChromium } from '../console/browser.ts';
import { createUser, PASSWORD, type Deployment, type TestUser } from '../identity/sign-in/helpers.ts';
import { browserAuthentication, browserRegistration, createPasskeyApplication, deployOnLocalhost, pageWithAuthenticator, withLibrary } from '../identity/passkeys/helpers.ts';
import { inviteLink } from '../identity/sign-out/deployment.ts';
import { readAllPages } from './helpers.ts';

after(async () => { await closeBrowser(); });

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_BODY = { 'content-type': 'application/json' };
const NOBODY = { type: 'user', id: '', name: '' };
const asUser = (user: TestUser) => ({ type: 'user', id: String(user.id) });
const targetOf = (user: TestUser) => ({ type: 'user', id: String(user.id), name: user.username });
const brief = (events: AuditEvent[]) => events.map((e) => ({ action: e.action, actor: e.actor, target: e.target }));

/** The events written while `fn` runs, oldest first. */
async function eventsOf(d: Deployment, fn: () => Promise<unknown>): Promise<AuditEvent[]> {
  const all = async () => (await readAllPages(d.admin, d.customer.customerKey, { limit: 500 })).reverse();
  const before = new Set((await all()).map((e) => e.eventId));
  await fn();
  return (await all()).filter((e) => !before.has(e.eventId));
}

/** A passkey of `user` on the authenticator of `page` (registered through the service, as the account page does). */
async function registerPasskey(d: Deployment, page: Page, user: TestUser): Promise<void> {
  const holder = { customerId: d.customer.customerId, userId: user.id };
  const registration = await d.composition.services.passkeys.registrationOptions(holder, { username: user.username, displayName: user.username });
  await d.composition.services.passkeys.register(holder, registration.ceremonyId, await browserRegistration(page, registration.options), 'Key', undefined, SYSTEM);
}

/** The sign-in flow's page script, by hand: its ceremony's options, then an answer posted to verify. */
function flowPasskey(browser: Browser, flow: string) {
  return {
    async options(): Promise<{ ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON }> {
      const response = await browser.fetch(`${flow}/passkey/options`, { method: 'POST', headers: JSON_BODY, body: '{}' });
      assert.equal(response.status, 200);
      return await response.json() as never;
    },
    async verify(ceremonyId: string, response: AuthenticationResponseJSON): Promise<number> {
      return (await browser.fetch(`${flow}/passkey/verify`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ ceremonyId, response }) })).status;
    },
  };
}

async function startFlow(browser: Browser, authorize: string): Promise<string> {
  const response = await browser.fetch(authorize);
  assert.equal(response.status, 303);
  return new URL(response.headers.get('location')!, authorize).href;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('passkey audit events', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('passkey audit events', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('refused passkeys in the audit log', (kind) => {
    test('hosted sign-in: each refused assertion is one signin.failed (nobody at step 1, the flow\'s user at the second factor); the right one signin.succeeded', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const passkeyFirst = await createPasskeyApplication(d, returnUrl, 'PASSKEY', 'NONE', 'Wiki');
      const twoFactor = await createPasskeyApplication(d, returnUrl, 'PASSWORD', 'PASSKEY', 'Portal');
      const user = await createUser(d);
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(a.page, d.url, d.url);
      await registerPasskey(d, a.page, user);

      // Step 1, username-less: a challenge answered after its 5 minutes; then an answer used twice.
      const browser = new Browser();
      const first = flowPasskey(browser, await startFlow(browser, passkeyFirst.authorize));
      const late = await first.options();
      const lateAnswer = await browserAuthentication(a.page, late.options);
      d.clock.advance(5 * 60_000);
      const expired = await eventsOf(d, async () => assert.equal(await first.verify(late.ceremonyId, lateAnswer), 401));
      assert.deepEqual(brief(expired), [{ action: 'signin.failed', actor: { type: 'system', id: '' }, target: NOBODY }]);
      const fresh = await first.options();
      const answer = await browserAuthentication(a.page, fresh.options);
      const signedIn = await eventsOf(d, async () => assert.equal(await first.verify(fresh.ceremonyId, answer), 200));
      assert.deepEqual(brief(signedIn), [{ action: 'signin.succeeded', actor: asUser(user), target: targetOf(user) }]);
      const again = new Browser();
      const replay = flowPasskey(again, await startFlow(again, passkeyFirst.authorize));
      const replayed = await eventsOf(d, async () => assert.equal(await replay.verify((await replay.options()).ceremonyId, answer), 401));
      assert.deepEqual(brief(replayed), [{ action: 'signin.failed', actor: { type: 'system', id: '' }, target: NOBODY }]);
      assert.ok(!JSON.stringify(replayed).includes(answer.response.signature), 'nothing of the assertion in the event');

      // The second factor after the password: another user's passkey, a foreign origin, no user verification.
      const second = new Browser();
      const flow = await startFlow(second, twoFactor.authorize);
      assert.equal((await second.fetch(flow, { method: 'POST', headers: FORM, body: new URLSearchParams({ username: user.username }).toString() })).status, 200);
      assert.equal((await second.fetch(flow, { method: 'POST', headers: FORM, body: new URLSearchParams({ password: PASSWORD }).toString() })).status, 200);
      const step = flowPasskey(second, flow);
      const failedAsUser = [{ action: 'signin.failed', actor: asUser(user), target: targetOf(user) }];

      const someoneElse = await createUser(d);
      const b = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(b.page, d.url, d.url);
      await registerPasskey(d, b.page, someoneElse);
      const forUser = await step.options();
      // Their authenticator holds only their credential: asked for any (discoverable), it answers with it.
      const theirs = await browserAuthentication(b.page, { ...forUser.options, allowCredentials: [] });
      assert.deepEqual(brief(await eventsOf(d, async () => assert.equal(await step.verify(forUser.ceremonyId, theirs), 401))), failedAsUser);

      const [credential] = (await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.authenticatorId })).credentials;
      const foreign = await pageWithAuthenticator(t, { noAutofill: true });
      await foreign.cdp.send('WebAuthn.addCredential', { authenticatorId: foreign.authenticatorId, credential: credential! });
      await withLibrary(foreign.page, d.app.origin, d.url);
      const phishing = await step.options();
      const phished = await browserAuthentication(foreign.page, phishing.options);
      assert.deepEqual(brief(await eventsOf(d, async () => assert.equal(await step.verify(phishing.ceremonyId, phished), 401))), failedAsUser);

      await a.cdp.send('WebAuthn.setUserVerified', { authenticatorId: a.authenticatorId, isUserVerified: false });
      const unverified = await step.options();
      const withoutUv = await browserAuthentication(a.page, { ...unverified.options, userVerification: 'discouraged' });
      assert.deepEqual(brief(await eventsOf(d, async () => assert.equal(await step.verify(unverified.ceremonyId, withoutUv), 401))), failedAsUser);

      await a.cdp.send('WebAuthn.setUserVerified', { authenticatorId: a.authenticatorId, isUserVerified: true });
      const right = await step.options();
      const done = await eventsOf(d, async () => assert.equal(await step.verify(right.ceremonyId, await browserAuthentication(a.page, right.options)), 200));
      assert.deepEqual(brief(done), [{ action: 'signin.succeeded', actor: asUser(user), target: targetOf(user) }]);
    });

    test('a passkey enrolled at the sign-in\'s enrolment step: user.passkey.added as the user', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const portal = await createPasskeyApplication(d, returnUrl, 'PASSWORD', 'PASSKEY', 'Portal');
      const user = await createUser(d);
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(a.page, d.url, d.url);
      const browser = new Browser();
      const flow = await startFlow(browser, portal.authorize);
      assert.equal((await browser.fetch(flow, { method: 'POST', headers: FORM, body: new URLSearchParams({ username: user.username }).toString() })).status, 200);
      assert.equal((await browser.fetch(flow, { method: 'POST', headers: FORM, body: new URLSearchParams({ password: PASSWORD }).toString() })).status, 200);
      const started = await browser.fetch(`${flow}/passkey/options`, { method: 'POST', headers: JSON_BODY, body: '{}' });
      const { ceremonyId, options } = await started.json() as { ceremonyId: string; options: PublicKeyCredentialCreationOptionsJSON };
      const created = await browserRegistration(a.page, options);
      const added = await eventsOf(d, async () => {
        const answer = await browser.fetch(`${flow}/passkey/verify`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ ceremonyId, response: created, name: 'Laptop' }) });
        assert.equal(answer.status, 200);
      });
      assert.deepEqual(brief(added), [{ action: 'user.passkey.added', actor: asUser(user), target: targetOf(user) }]);
    });

    test('magic-link landing: a refused passkey at the second factor is signin.failed as the link\'s user', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const returnUrl = `${d.app.origin}/return`;
      const ledger = await createPasskeyApplication(d, returnUrl, 'MAGIC_LINK', 'PASSKEY', 'Ledger');
      const user = await createUser(d);
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(a.page, d.url, d.url);
      await registerPasskey(d, a.page, user);

      const browser = new Browser();
      const link = await inviteLink({ ...d, issuerPath: new URL(d.issuer).pathname, customerKey: Number(d.customer.customerKey) }, user.username, user.email, ledger.uuid, returnUrl);
      assert.equal((await browser.fetch(link, { method: 'POST', headers: FORM, body: '' })).status, 200);
      const started = await browser.fetch(`${d.url}/magic/passkey/options`, { method: 'POST', headers: JSON_BODY, body: '{}' });
      assert.equal(started.status, 200);
      const { ceremonyId, options } = await started.json() as { ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON };
      await a.cdp.send('WebAuthn.setUserVerified', { authenticatorId: a.authenticatorId, isUserVerified: false });
      const withoutUv = await browserAuthentication(a.page, { ...options, userVerification: 'discouraged' });
      const refused = await eventsOf(d, async () => {
        const answer = await browser.fetch(`${d.url}/magic/passkey`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ ceremonyId, response: withoutUv }) });
        assert.equal(answer.status, 400);
      });
      assert.deepEqual(brief(refused), [{ action: 'signin.failed', actor: asUser(user), target: targetOf(user) }]);
    });
  });
}
