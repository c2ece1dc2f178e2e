/**
 * Passkey tests' deployment and authenticator: Latchkey listening on 127.0.0.1 with the public URL
 * http://localhost:<port> (WebAuthn needs a secure context and a host name as RP ID; Chromium resolves
 * localhost), and Chromium's virtual authenticator through CDP (WebAuthn.addVirtualAuthenticator).
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { CDPSession, Page } from 'playwright-core';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { build } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import type { StoreKind } from '../../helpers/stores.ts';
import { browser } from '../../console/browser.ts';
import { appServer } from '../../helpers/app-server.ts';
import type { Deployment } from '../sign-in/helpers.ts';

export async function deployOnLocalhost(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<Deployment> {
  const app = await appServer(t);
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url, ...env });
  await server.identity.listen({ port, host: '127.0.0.1' });
  return { ...server, url, issuer: `${url}/customers/${server.customer.customerKey}`, app };
}

export interface Authenticator { page: Page; cdp: CDPSession; authenticatorId: string; errors: string[] }

/**
 * A fresh browser context and page with a platform authenticator that keeps discoverable credentials.
 * `noAutofill`: a browser that does not offer passkeys in autofill (isConditionalMediationAvailable false).
 */
export async function pageWithAuthenticator(t: TestContext, options: { isUserVerified?: boolean; noAutofill?: boolean } = {}): Promise<Authenticator> {
  const page = await (await browser(t)).newPage();
  if (options.noAutofill) await page.addInitScript(() => { PublicKeyCredential.isConditionalMediationAvailable = async () => false; });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true,
      isUserVerified: options.isUserVerified ?? true, automaticPresenceSimulation: true,
    },
  });
  return { page, cdp, authenticatorId, errors };
}

/**
 * Chromium's virtual authenticator answers a waiting autofill request (conditional mediation) by itself
 * while presence is simulated: off while a test types at step 1, on once that page is left (a request
 * made while it is off waits for good).
 */
export async function simulatePresence(a: Authenticator, enabled: boolean): Promise<void> {
  await a.cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId: a.authenticatorId, enabled });
}

export async function storedCredentials(a: Authenticator) {
  return (await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.authenticatorId })).credentials;
}

/** Runs @simplewebauthn/browser in the page (served at /assets/passkeys.js) on options the test got from the service. */
export async function browserAuthentication(page: Page, options: PublicKeyCredentialRequestOptionsJSON): Promise<AuthenticationResponseJSON> {
  return page.evaluate(async (optionsJSON) => {
    const lib = (window as unknown as { SimpleWebAuthnBrowser: { startAuthentication(o: unknown): Promise<unknown> } }).SimpleWebAuthnBrowser;
    return await lib.startAuthentication({ optionsJSON }) as never;
  }, options);
}

export async function browserRegistration(page: Page, options: PublicKeyCredentialCreationOptionsJSON): Promise<RegistrationResponseJSON> {
  return page.evaluate(async (optionsJSON) => {
    const lib = (window as unknown as { SimpleWebAuthnBrowser: { startRegistration(o: unknown): Promise<unknown> } }).SimpleWebAuthnBrowser;
    return await lib.startRegistration({ optionsJSON }) as never;
  }, options);
}

/** A page of `origin` with the passkeys script loaded from `scriptOrigin` (Latchkey): the browser library at hand. */
export async function withLibrary(page: Page, origin: string, scriptOrigin: string): Promise<void> {
  await page.goto(`${origin}/blank`);
  await page.addScriptTag({ url: `${scriptOrigin}/assets/passkeys.js` });
  assert.equal(await page.evaluate(() => typeof (window as unknown as { SimpleWebAuthnBrowser?: unknown }).SimpleWebAuthnBrowser), 'object');
}

export async function createPasskeyApplication(d: Deployment, returnUrl: string, firstFactor: 'PASSWORD' | 'MAGIC_LINK' | 'PASSKEY', secondFactor: 'NONE' | 'AUTHENTICATOR_APP' | 'PASSKEY' | 'ANY', name: string) {
  const customerKey = Number(d.customer.customerKey);
  const created = await d.admin.post('/admin/applications/create', { customerKey, type: 'JWT', returnUrls: [returnUrl], name });
  assert.equal(created.statusCode, 200, created.body);
  const { applicationUuid } = (created.json() as { application: { applicationUuid: string } }).application;
  const policy = await d.admin.post('/admin/policies/create', { customerKey, applicationUuid, firstFactor, secondFactor });
  assert.equal(policy.statusCode, 200, policy.body);
  return { uuid: applicationUuid, authorize: `${d.issuer}/jwt/authorize?client_id=${applicationUuid}&redirect_uri=${encodeURIComponent(returnUrl)}` };
}
