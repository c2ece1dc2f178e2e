/**
 * The hosted sign-in's test deployment: Latchkey listening on 127.0.0.1 with its public URL, mail to a
 * real SMTP sink, and a relying application on another site (http://localhost:<port>) that records
 * what reaches it. Users, applications and policies are made through the signed admin API.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { build, type TestApp } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import type { SmtpSink } from '../../helpers/smtp-sink.ts';
import type { StoreKind } from '../../helpers/stores.ts';
import { appServer, type AppServer } from '../../helpers/app-server.ts';

export interface Deployment extends TestApp {
  url: string;
  issuer: string;
  app: AppServer;
}

export async function deploy(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<Deployment> {
  const app = await appServer(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await build(t, kind, { LATCHKEY_PUBLIC_URL: url, ...env });
  await server.identity.listen({ port, host: '127.0.0.1' });
  return { ...server, url, issuer: `${url}/customers/${server.customer.customerKey}`, app };
}

export const PASSWORD = 'correct horse battery staple';

export interface TestUser { id: number; username: string; email: string }

export async function createUser(d: Deployment, options: { password?: string; groups?: string[] } = {}): Promise<TestUser> {
  const customerKey = Number(d.customer.customerKey);
  const username = `ada${randomBytes(4).toString('hex')}`;
  const email = `${username}@example.test`;
  const created = await d.admin.post('/admin/users/create', {
    customerKey, username, email, firstName: 'Ada', lastName: 'Lovelace',
    ...(options.password === undefined ? { password: PASSWORD } : options.password ? { password: options.password } : {}),
    ...(options.groups ? { groups: options.groups.map((name) => ({ name, attributes: [] })) } : {}),
  });
  assert.equal(created.statusCode, 200, created.body);
  const user = await d.composition.services.users.findByLogin(d.customer.customerId, username);
  assert.ok(user);
  return { id: user.id, username, email };
}

export interface TestApplication { uuid: string; clientSecret?: string; name: string }

export async function createApplication(d: Deployment, application: Record<string, unknown>, firstFactor: 'PASSWORD' | 'MAGIC_LINK', secondFactor: 'NONE' | 'AUTHENTICATOR_APP' = 'NONE'): Promise<TestApplication> {
  const customerKey = Number(d.customer.customerKey);
  const name = String(application.name ?? `App ${randomBytes(2).toString('hex')}`);
  const created = await d.admin.post('/admin/applications/create', { customerKey, ...application, name });
  assert.equal(created.statusCode, 200, created.body);
  const { application: { applicationUuid }, clientSecret } = created.json() as { application: { applicationUuid: string }; clientSecret?: string };
  const policy = await d.admin.post('/admin/policies/create', { customerKey, applicationUuid, firstFactor, secondFactor });
  assert.equal(policy.statusCode, 200, policy.body);
  return { uuid: applicationUuid, clientSecret, name };
}

/** Registers and validates an authenticator for the user (the admin API); the clock moves past the spent code. */
export async function enrolAuthenticator(d: Deployment, user: TestUser): Promise<string> {
  const customerKey = Number(d.customer.customerKey);
  const registered = await d.admin.post('/auth/google-auth-secret', { customerKey, username: user.username });
  assert.equal(registered.statusCode, 200, registered.body);
  const { secret } = registered.json() as { secret: string };
  const validated = await d.admin.post('/auth/validate-google-auth-secret', {
    customerKey, username: user.username, authenticatorType: 'GOOGLE AUTHENTICATOR', secret, otpToken: totpAt(secret, d.clock.now()),
  });
  assert.equal(validated.statusCode, 200, validated.body);
  d.clock.advance(30_000);
  return secret;
}

/** Step 1 and the password step, as a person does them. */
export async function signInWithPassword(page: Page, username: string, password = PASSWORD): Promise<void> {
  await page.getByLabel('Username or e-mail').fill(username);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The 6-digit code of the latest LOGIN mail to `email`. */
export async function mailedCode(d: Deployment, sink: SmtpSink, email: string): Promise<{ code: string; link: string }> {
  await d.composition.services.signIn.idle();
  await d.composition.mailWorker.runOnce();
  for (let i = 0; i < 50; i++) {
    const mail = [...sink.messages].reverse().find((m) => m.envelope.to.includes(email));
    const text = mail?.parsed.text ?? '';
    const code = /^([0-9]{6})$/m.exec(text)?.[1];
    const link = new RegExp(`${d.url}/magic/[A-Za-z0-9_-]{43}`).exec(text)?.[0];
    if (code && link) return { code, link };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no LOGIN mail to ${email}`);
}
