/**
 * What the sign-out tests share: Latchkey listening on 127.0.0.1 (its public URL), a relying
 * application on another site (http://localhost:<port>) that records the requests it gets, a user
 * and OAUTH applications under MAGIC_LINK policies, and the INVITE link read from the mail.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { simpleParser } from 'mailparser';
import { build, type TestApp } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import type { StoreKind } from '../../helpers/stores.ts';
import { appServer, type AppServer } from '../../helpers/app-server.ts';

export interface Deployment extends TestApp {
  url: string;
  issuer: string;
  issuerPath: string;
  app: AppServer;
  customerKey: number;
}

export async function deploy(t: TestContext, kind: StoreKind): Promise<Deployment> {
  const app = await appServer(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url });
  await server.identity.listen({ port, host: '127.0.0.1' });
  const issuerPath = `/customers/${server.customer.customerKey}`;
  return { ...server, url, issuer: `${url}${issuerPath}`, issuerPath, app, customerKey: Number(server.customer.customerKey) };
}

export interface Application { uuid: string; secret: string }

export async function user(d: Deployment, username: string): Promise<{ username: string; email: string; id: number }> {
  const email = `${username}@example.test`;
  const created = await d.admin.post('/admin/users/create', { customerKey: d.customerKey, username, email, firstName: 'Ada', lastName: 'Lovelace' });
  assert.equal(created.statusCode, 200, created.body);
  const found = await d.composition.services.users.findByLogin(d.customer.customerId, username);
  return { username, email, id: found!.id };
}

/** An OAUTH application (through the signed admin API) and its application-wide policy. */
export async function oauthApplication(d: Deployment, name: string, fields: Record<string, unknown>, secondFactor: 'NONE' | 'AUTHENTICATOR_APP' = 'NONE'): Promise<Application> {
  const created = await d.admin.post('/admin/applications/create', { customerKey: d.customerKey, name, type: 'OAUTH', ...fields });
  assert.equal(created.statusCode, 200, created.body);
  const { application: { applicationUuid }, clientSecret } = created.json() as { application: { applicationUuid: string }; clientSecret: string };
  const policy = await d.admin.post('/admin/policies/create', { customerKey: d.customerKey, applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor });
  assert.equal(policy.statusCode, 200, policy.body);
  return { uuid: applicationUuid, secret: clientSecret };
}

/** Generates the INVITE link and reads it from the newest .eml to `email` the mail worker wrote. */
export async function inviteLink(d: Deployment, username: string, email: string, applicationUuid: string, redirectUri?: string): Promise<string> {
  const generated = await d.admin.post('/admin/magiclink/generate', { username, applicationUuid, ...(redirectUri ? { redirectUri } : {}) });
  assert.equal(generated.statusCode, 200, generated.body);
  await d.composition.mailWorker.runOnce();
  const outbox = join(d.composition.config.dataDir, 'outbox');
  const links: string[] = [];
  for (const name of readdirSync(outbox).filter((file) => file.endsWith('.eml')).sort()) {
    const mail = await simpleParser(readFileSync(join(outbox, name)));
    if (!JSON.stringify(mail.to).includes(email)) continue;
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(mail.text ?? '')?.[0];
    if (link) links.push(link);
  }
  // The generate replaced any earlier link of the user for this application: the newest one works.
  for (const link of links.reverse()) {
    const shown = await fetch(link);
    if (shown.status === 200) return link;
  }
  throw new Error(`no live link to ${email} in ${outbox}`);
}
