/**
 * What the account page's passkey tests share: Latchkey with the public URL http://localhost:<port>
 * (WebAuthn needs a secure context and refuses an IP address as relying party; it listens on
 * 127.0.0.1, which Chromium reaches as localhost), a user signed in through an INVITE link to a JWT
 * application, and Chromium's virtual authenticator (CDP WebAuthn domain).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { build } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import type { StoreKind } from '../../helpers/stores.ts';
import { appServer } from '../../helpers/app-server.ts';
import { createUser, PASSWORD, type Deployment, type TestUser } from '../sign-in/helpers.ts';
import { inviteLink } from '../sign-out/deployment.ts';

export { PASSWORD };

export interface LocalDeployment extends Deployment {
  issuerPath: string;
  customerKey: number;
}

export async function deployOnLocalhost(t: TestContext, kind: StoreKind): Promise<LocalDeployment> {
  const app = await appServer(t);
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url });
  await server.identity.listen({ port, host: '127.0.0.1' });
  const issuerPath = `/customers/${server.customer.customerKey}`;
  return { ...server, url, issuer: `${url}${issuerPath}`, issuerPath, app, customerKey: Number(server.customer.customerKey) };
}

export async function person(d: LocalDeployment): Promise<TestUser> {
  return createUser(d);
}

/** A JWT application whose policy is `firstFactor`/`secondFactor`; returns its UUID and return URL. */
export async function jwtApplication(d: LocalDeployment, name: string, firstFactor: string, secondFactor = 'NONE'): Promise<{ uuid: string; returnUrl: string }> {
  const returnUrl = `${d.app.origin}/jwt/${encodeURIComponent(name)}`;
  const created = await d.admin.post('/admin/applications/create', { customerKey: d.customerKey, name, type: 'JWT', returnUrls: [returnUrl] });
  assert.equal(created.statusCode, 200, created.body);
  const uuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
  const policy = await d.admin.post('/admin/policies/create', { customerKey: d.customerKey, applicationUuid: uuid, firstFactor, secondFactor });
  assert.equal(policy.statusCode, 200, policy.body);
  return { uuid, returnUrl };
}

/** A real sign-in of this browser: an INVITE link to a JWT application (MAGIC_LINK, no second factor) opens the SSO session. */
export async function signInByLink(page: Page, d: LocalDeployment, user: TestUser, appName = 'Reports'): Promise<void> {
  const application = await jwtApplication(d, appName, 'MAGIC_LINK');
  await page.goto(await inviteLink({ ...d, issuerPath: d.issuerPath }, user.username, user.email, application.uuid, application.returnUrl));
  await page.getByRole('button', { name: `Continue to ${appName}` }).click();
  await page.waitForURL((url) => url.href.startsWith(`${application.returnUrl}?id_token=`));
}

/** Chromium's virtual platform authenticator for this page (resident keys, user verification as given). */
export async function virtualAuthenticator(page: Page, options: { isUserVerified?: boolean } = {}): Promise<{ remove(): Promise<void> }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: options.isUserVerified ?? true, automaticPresenceSimulation: true },
  });
  return { remove: async () => { await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId }); } };
}

/** On the account page: `Add a passkey` named `name`, and wait for it in the list. */
export async function addPasskey(page: Page, name: string): Promise<void> {
  const section = page.getByRole('region', { name: 'Passkeys' });
  await section.getByLabel('Passkey name').fill(name);
  await section.getByRole('button', { name: 'Add a passkey' }).click();
  await section.getByRole('listitem').filter({ hasText: name }).waitFor();
}

/** Generates an INVITE link and reads it from the newest mail to the user, whether or not it can be used. */
export async function newestLink(d: LocalDeployment, user: TestUser, applicationUuid: string, redirectUri: string): Promise<string> {
  const generated = await d.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid, redirectUri });
  assert.equal(generated.statusCode, 200, generated.body);
  await d.composition.mailWorker.runOnce();
  const outbox = join(d.composition.config.dataDir, 'outbox');
  for (const name of readdirSync(outbox).filter((file) => file.endsWith('.eml')).sort().reverse()) {
    const mail = await simpleParser(readFileSync(join(outbox, name)));
    const link = JSON.stringify(mail.to).includes(user.email) ? new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail.text ?? '')?.[0] : undefined;
    if (link) return link;
  }
  throw new Error(`no link to ${user.email}`);
}
