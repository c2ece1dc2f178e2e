/**
 * The magic-link landing joins the customer's SSO session, in Chromium on both stores: a recovery code
 * at its second-factor step (from the same 5 attempts) signs in once and opens a session showing
 * email and otp; a LOGIN link of an OAUTH application with nowhere to go ends on "You are signed in"
 * with the session open.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { SSO_COOKIE } from '../../../src/identity/sso-sessions/service.ts';
import { sha256Hex } from '../../../src/lib/tokens.ts';
import { NO_BROWSER, browser, closeBrowser, findChromium } from '../../console/browser.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { deploy, inviteLink, oauthApplication, user, type Deployment } from './deployment.ts';

after(closeBrowser);

async function jwks(d: Deployment): Promise<JSONWebKeySet> {
  const discovery = await (await fetch(`${d.issuer}/.well-known/openid-configuration`)).json() as { jwks_uri: string };
  return await (await fetch(discovery.jwks_uri)).json() as JSONWebKeySet;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('landing session browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('landing session browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('the landing joins the SSO session', (kind) => {
    test('a recovery code at the second-factor step works once, from the same 5 attempts; the session shows email and otp', async (t) => {
      const d = await deploy(t, kind);
      const returnUrl = `${d.app.origin}/sso/return`;
      const person = await user(d, 'grace');
      const created = await d.admin.post('/admin/applications/create', { customerKey: d.customerKey, name: 'Portal', type: 'JWT', returnUrls: [returnUrl] });
      const applicationUuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
      assert.equal((await d.admin.post('/admin/policies/create', { customerKey: d.customerKey, applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP' })).statusCode, 200);
      const registered = await d.admin.post('/auth/google-auth-secret', { customerKey: d.customerKey, username: person.username });
      const { secret } = registered.json() as { secret: string };
      const validated = await d.admin.post('/auth/validate-google-auth-secret', {
        customerKey: d.customerKey, username: person.username, authenticatorType: 'GOOGLE AUTHENTICATOR', secret, otpToken: totpAt(secret, d.clock.now()),
      });
      assert.equal(validated.statusCode, 200, validated.body);
      const [code] = await d.composition.services.recoveryCodes.generate(d.customer.customerId, person.id);
      const page = await (await browser(t)).newPage();
      const right = totpAt(secret, d.clock.now());

      await page.goto(await inviteLink(d, person.username, person.email, applicationUuid, returnUrl));
      await page.getByRole('button', { name: 'Continue to Portal' }).click();
      await page.getByLabel('Authenticator code').fill(right === '000000' ? '111111' : '000000');
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('alert').filter({ hasText: '(4 attempts left)' }).waitFor();
      await page.getByRole('link', { name: 'Use a recovery code' }).click();
      await page.getByRole('heading', { name: 'Enter a recovery code' }).waitFor();
      await page.getByLabel('Recovery code').fill('aaaaaaaaaa');
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('alert').filter({ hasText: 'The recovery code is incorrect or already used (3 attempts left).' }).waitFor();
      // Typed as a person might: upper case, with a hyphen.
      await page.getByLabel('Recovery code').fill(`${code.slice(0, 5)}-${code.slice(5)}`.toUpperCase());
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL((url) => url.href.startsWith(`${returnUrl}?id_token=`));
      const idToken = new URL(page.url()).searchParams.get('id_token')!;
      const { payload } = await jwtVerify(idToken, createLocalJWKSet(await jwks(d)), { issuer: d.issuer, audience: applicationUuid, currentDate: new Date(d.clock.now()) });
      assert.deepEqual(payload.amr, ['email', 'otp']);
      const cookie = (await page.context().cookies(`${d.issuer}/`)).find((c) => c.name === SSO_COOKIE);
      const signedIn = await d.composition.services.ssoSessions.current(d.customer.customerId, cookie?.value);
      assert.deepEqual(signedIn?.session.amr, ['email', 'otp']);
      assert.equal(await d.composition.services.recoveryCodes.remaining(d.customer.customerId, person.id), 9);

      // The same code again, with a new link: refused, and the attempts still count.
      await page.goto(await inviteLink(d, person.username, person.email, applicationUuid, returnUrl));
      await page.getByRole('button', { name: 'Continue to Portal' }).click();
      await page.getByRole('link', { name: 'Use a recovery code' }).click();
      await page.getByLabel('Recovery code').fill(code);
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('alert').filter({ hasText: '(4 attempts left)' }).waitFor();
      assert.equal(d.app.requests.filter((url) => url.pathname === '/sso/return').length, 1, 'the application was reached once');
    });

    test('a LOGIN link of an OAUTH application with no target: "You are signed in", the session open', async (t) => {
      const d = await deploy(t, kind);
      const person = await user(d, 'alan');
      const app = await oauthApplication(d, 'Tracker', { redirectUris: [`${d.app.origin}/callback`] });
      // A LOGIN row as the sign-in page's MAGIC_LINK step writes it (no redirect target: the application has no login URL).
      const token = randomBytes(32).toString('base64url');
      const db = d.composition.store.db;
      const application = await db.selectFrom('applications').select('id').where('uuid', '=', app.uuid).executeTakeFirstOrThrow();
      await db.insertInto('magic_links').values({
        customer_id: d.customer.customerId, user_id: person.id, application_id: application.id, type: 'LOGIN', token_hash: sha256Hex(token),
        redirect_uri: null, expires_at: d.clock.now() + 15 * 60_000, created_at: d.clock.now(), consumed_at: null, revoked_at: null, correlation_id: 'test',
      }).execute();
      // The admin's revoke of open invites leaves LOGIN links alone: the user has no INVITE to revoke.
      const revoked = await d.admin.post('/admin/magiclink/revoke', { customerKey: d.customerKey, username: person.username });
      assert.equal(revoked.statusCode, 404, revoked.body);
      const page = await (await browser(t)).newPage();
      await page.goto(`${d.url}/magic/${token}`);
      await page.getByRole('button', { name: 'Continue to Tracker' }).click();
      await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
      await page.getByText('Return to Tracker').waitFor();
      const cookie = (await page.context().cookies(`${d.issuer}/`)).find((c) => c.name === SSO_COOKIE);
      const signedIn = await d.composition.services.ssoSessions.current(d.customer.customerId, cookie?.value);
      assert.deepEqual([signedIn?.user.username, signedIn?.session.amr], [person.username, ['email']]);
      // Used once, like an INVITE link.
      assert.equal((await page.reload())?.status(), 410);
      assert.equal(d.app.requests.length, 0, 'nothing was sent to the application');
    });
  });
}
