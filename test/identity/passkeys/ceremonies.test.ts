/**
 * The passkey ceremonies' checks (PasskeysService), on responses a real authenticator made: Chromium's
 * virtual authenticator signs what @simplewebauthn/browser asks of it, and the test hands the service
 * exactly what a page would post. A replayed assertion, one made on another origin, another customer's
 * credential, another user's, and one without user verification are all refused; the counter is kept;
 * users/get names the passkey while it is the user's only second factor.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../../src/audit/context.ts';
import { Invalid } from '../../../src/lib/errors.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { NO_BROWSER, closeBrowser, findChromium } from '../../console/browser.ts';
import { createUser, enrolAuthenticator } from '../sign-in/helpers.ts';
import { browserAuthentication, browserRegistration, deployOnLocalhost, pageWithAuthenticator, storedCredentials, withLibrary } from './helpers.ts';

after(async () => { await closeBrowser(); });

const refused = (error: unknown) => error instanceof Invalid && error.field === 'passkey';

if (!findChromium()) {
  if (process.env.CI === 'true') test('passkey ceremony tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('passkey ceremony tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('passkey ceremonies', (kind) => {
    test('registered and used once per challenge: a replayed assertion, a foreign origin, another customer or user, no user verification: refused; the counter kept', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const passkeys = d.composition.services.passkeys;
      const customerId = d.customer.customerId;
      const user = await createUser(d);
      const holder = { customerId, userId: user.id };
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(a.page, d.url, d.url);
      assert.deepEqual(passkeys.rp, { id: 'localhost', origin: d.url, name: 'Latchkey' });

      const registration = await passkeys.registrationOptions(holder, { username: user.username, displayName: 'Ada Lovelace' });
      assert.equal(registration.options.authenticatorSelection?.residentKey, 'required');
      assert.equal(registration.options.authenticatorSelection?.userVerification, 'required');
      const created = await browserRegistration(a.page, registration.options);
      const summary = await passkeys.register(holder, registration.ceremonyId, created, undefined, 'Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0', SYSTEM);
      assert.match(summary.name, /^Chrome on Linux, \d{4}-\d{2}-\d{2}$/);
      await assert.rejects(passkeys.register(holder, registration.ceremonyId, created, 'Again', undefined, SYSTEM), refused, 'a registration ceremony is used once');
      assert.equal(await passkeys.count(holder), 1);
      const customerKey = Number(d.customer.customerKey);
      const userGet = async (username: string) => ((await d.admin.post('/admin/users/get', { customerKey, username })).json() as { users: { secondFactorAuthType: string }[] }).users[0]!;
      assert.equal((await userGet(user.username)).secondFactorAuthType, 'PASSKEY', "the passkey is the user's only second factor");

      // Username-less: the credential names the user; the counter and the last use are kept.
      const first = await passkeys.authenticationOptions(customerId);
      assert.deepEqual([first.options.allowCredentials, first.options.userVerification, first.options.rpId], [[], 'required', 'localhost']);
      const assertion = await browserAuthentication(a.page, first.options);
      d.clock.advance(60_000);
      assert.deepEqual(await passkeys.authenticate(customerId, first.ceremonyId, assertion), { holder, passkeyId: summary.passkeyId });
      const [afterUse] = await passkeys.list(holder);
      assert.equal(afterUse!.lastUsedAt, d.clock.now());
      const [credential] = await storedCredentials(a);
      const counter = async () => Number((await d.composition.store.db.selectFrom('passkeys').select('counter').where('id', '=', Number(summary.passkeyId)).executeTakeFirstOrThrow()).counter);
      assert.ok(credential!.signCount > 0);
      assert.equal(await counter(), credential!.signCount, "the authenticator's signature counter is kept");

      // Replayed: the same answer again, under its own (used) ceremony or a new one.
      await assert.rejects(passkeys.authenticate(customerId, first.ceremonyId, assertion), refused);
      const fresh = await passkeys.authenticationOptions(customerId);
      await assert.rejects(passkeys.authenticate(customerId, fresh.ceremonyId, assertion), refused);

      // A challenge lives 5 minutes.
      const late = await passkeys.authenticationOptions(customerId);
      const lateAnswer = await browserAuthentication(a.page, late.options);
      d.clock.advance(5 * 60_000);
      await assert.rejects(passkeys.authenticate(customerId, late.ceremonyId, lateAnswer), refused);

      // Another customer: its ceremony does not find this customer's credential; this customer's ceremony is not its.
      const other = await d.newCustomer();
      const foreignCustomer = await passkeys.authenticationOptions(other.customer.customerId);
      const underOther = await browserAuthentication(a.page, foreignCustomer.options);
      await assert.rejects(passkeys.authenticate(other.customer.customerId, foreignCustomer.ceremonyId, underOther), refused);
      const ours = await passkeys.authenticationOptions(customerId);
      const oursAnswer = await browserAuthentication(a.page, ours.options);
      await assert.rejects(passkeys.authenticate(other.customer.customerId, ours.ceremonyId, oursAnswer), refused);

      // Another user's: a second factor ceremony for someone else (who has no passkey) gets this one.
      const someoneElse = await createUser(d);
      const forOther = await passkeys.authenticationOptions(customerId, { customerId, userId: someoneElse.id });
      const wrongUser = await browserAuthentication(a.page, forOther.options);
      await assert.rejects(passkeys.authenticate(customerId, forOther.ceremonyId, wrongUser), refused);

      // A foreign origin (same host, so the browser accepts the RP ID): refused, for both ceremonies.
      const foreign = await pageWithAuthenticator(t, { noAutofill: true });
      await foreign.cdp.send('WebAuthn.addCredential', { authenticatorId: foreign.authenticatorId, credential: credential! });
      await withLibrary(foreign.page, d.app.origin, d.url);
      const phished = await passkeys.authenticationOptions(customerId);
      const phishedAnswer = await browserAuthentication(foreign.page, phished.options);
      assert.equal(JSON.parse(Buffer.from(phishedAnswer.response.clientDataJSON, 'base64url').toString()).origin, d.app.origin);
      await assert.rejects(passkeys.authenticate(customerId, phished.ceremonyId, phishedAnswer), refused);
      const foreignRegistration = await passkeys.registrationOptions({ customerId, userId: someoneElse.id }, { username: someoneElse.username, displayName: 'X' });
      const foreignCreated = await browserRegistration(foreign.page, foreignRegistration.options);
      await assert.rejects(passkeys.register({ customerId, userId: someoneElse.id }, foreignRegistration.ceremonyId, foreignCreated, 'Phished', undefined, SYSTEM), refused);
      assert.equal(await passkeys.count({ customerId, userId: someoneElse.id }), 0);

      // No user verification: a page that asked the authenticator not to verify (the service asked it to) is refused.
      await a.cdp.send('WebAuthn.setUserVerified', { authenticatorId: a.authenticatorId, isUserVerified: false });
      const unverified = await passkeys.authenticationOptions(customerId);
      const unverifiedAnswer = await browserAuthentication(a.page, { ...unverified.options, userVerification: 'discouraged' });
      const flags = Buffer.from(unverifiedAnswer.response.authenticatorData, 'base64url')[32]!;
      assert.equal(flags & 0x04, 0, 'the authenticator did not verify the user');
      await assert.rejects(passkeys.authenticate(customerId, unverified.ceremonyId, unverifiedAnswer), refused);
      assert.equal(await counter(), credential!.signCount, 'no refused assertion moved the counter');

      // An authenticator app keeps its own value; removing the last passkey says NONE again.
      const withApp = await createUser(d);
      await enrolAuthenticator(d, withApp);
      const appHolder = { customerId, userId: withApp.id };
      await a.cdp.send('WebAuthn.setUserVerified', { authenticatorId: a.authenticatorId, isUserVerified: true });
      const appRegistration = await passkeys.registrationOptions(appHolder, { username: withApp.username, displayName: 'App user' });
      await passkeys.register(appHolder, appRegistration.ceremonyId, await browserRegistration(a.page, appRegistration.options), 'Key', undefined, SYSTEM);
      assert.equal((await userGet(withApp.username)).secondFactorAuthType, 'GOOGLE AUTHENTICATOR');
      await passkeys.remove(holder, summary.passkeyId, SYSTEM);
      assert.equal((await userGet(user.username)).secondFactorAuthType, 'NONE');
      await assert.rejects(passkeys.remove(holder, summary.passkeyId, SYSTEM), { code: 'not_found' });
    });

    test('list, rename and remove are the holder\'s only; names are 1..64 characters on one line', async (t) => {
      const d = await deployOnLocalhost(t, kind);
      const passkeys = d.composition.services.passkeys;
      const customerId = d.customer.customerId;
      const user = await createUser(d);
      const holder = { customerId, userId: user.id };
      const a = await pageWithAuthenticator(t, { noAutofill: true });
      await withLibrary(a.page, d.url, d.url);
      const registration = await passkeys.registrationOptions(holder, { username: user.username, displayName: 'Ada' });
      const summary = await passkeys.register(holder, registration.ceremonyId, await browserRegistration(a.page, registration.options), ' Laptop ', undefined, SYSTEM);
      assert.equal(summary.name, 'Laptop');
      await assert.rejects(passkeys.rename(holder, summary.passkeyId, 'x'.repeat(65)), { code: 'invalid' });
      await assert.rejects(passkeys.rename(holder, summary.passkeyId, 'two\nlines'), { code: 'invalid' });
      const owner = { customerId, userId: null };
      await assert.rejects(passkeys.rename(owner, summary.passkeyId, 'Mine'), { code: 'not_found' });
      await assert.rejects(passkeys.remove(owner, summary.passkeyId, SYSTEM), { code: 'not_found' });
      await assert.rejects(passkeys.remove(holder, 'abc', SYSTEM), { code: 'not_found' });
      await passkeys.rename(holder, summary.passkeyId, 'Phone');
      assert.deepEqual((await passkeys.list(holder)).map((p) => p.name), ['Phone']);
      assert.deepEqual(await passkeys.list(owner), []);
      // The user deleted: the passkeys go with them.
      assert.equal((await d.admin.post('/admin/users/delete', { customerKey: Number(d.customer.customerKey), username: user.username })).statusCode, 200);
      const left = await d.composition.store.db.selectFrom('passkeys').select('id').where('customer_id', '=', customerId).execute();
      assert.deepEqual(left, []);
    });
  });
}
