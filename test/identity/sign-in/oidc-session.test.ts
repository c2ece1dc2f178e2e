/**
 * The OpenID provider's own session follows the SSO session (the login prompt's check): an
 * application whose policy asks for more than the session showed asks only that factor, through the
 * provider's interaction; a session ended on the server (users/sessions/revoke, a reset) makes the
 * next authorization start at step 1 although the provider's cookie is still there.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as client from 'openid-client';
import { SYSTEM } from '../../../src/audit/context.ts';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { authorizationRequest, Browser, discover } from '../../helpers/relying-party.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { createApplication, createUser, deploy, enrolAuthenticator, PASSWORD, type Deployment, type TestApplication } from './helpers.ts';

const post = (browser: Browser, url: URL, fields: Record<string, string>) =>
  browser.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

async function authorize(d: Deployment, browser: Browser, app: TestApplication, redirectUri: string) {
  const config = await discover(d.issuer, app.uuid, app.clientSecret!);
  const request = await authorizationRequest(config, redirectUri, 'openid email');
  const reached = await browser.follow(request.url, redirectUri);
  return { config, request, reached };
}

async function redeem(started: Awaited<ReturnType<typeof authorize>>, at: URL) {
  const tokens = await client.authorizationCodeGrant(started.config, at, {
    pkceCodeVerifier: started.request.codeVerifier, expectedState: started.request.state, expectedNonce: started.request.nonce,
  });
  return tokens.claims()!;
}

describeEachStore('the provider session follows the SSO session', (kind) => {
  test('step-up through the interaction asks only the missing factor; a session ended on the server asks from step 1', async (t) => {
    const d = await deploy(t, kind);
    const first = `${d.app.origin}/one`;
    const second = `${d.app.origin}/two`;
    const plain = await createApplication(d, { type: 'OAUTH', redirectUris: [first], name: 'Plain' }, 'PASSWORD');
    const strict = await createApplication(d, { type: 'OAUTH', redirectUris: [second], name: 'Strict' }, 'PASSWORD', 'AUTHENTICATOR_APP');
    const user = await createUser(d);
    const secret = await enrolAuthenticator(d, user);
    const browser = new Browser();

    const one = await authorize(d, browser, plain, first);
    assert.ok(one.reached.response);
    assert.equal(one.reached.response.status, 200);
    assert.match(await one.reached.response.text(), /Username or e-mail/);
    await post(browser, one.reached.url, { username: user.username });
    const signedIn = await post(browser, one.reached.url, { password: PASSWORD });
    assert.equal(signedIn.status, 303);
    const back = await browser.follow(new URL(signedIn.headers.get('location')!, d.url), first);
    assert.equal(back.response, undefined);
    assert.deepEqual((await redeem(one, back.url)).amr, ['pwd']);

    // The same application again: no question.
    const again = await authorize(d, browser, plain, first);
    assert.equal(again.reached.response, undefined);

    // Strict asks for an authenticator code only.
    const two = await authorize(d, browser, strict, second);
    assert.ok(two.reached.response);
    const page = await two.reached.response.text();
    assert.match(page, /Authenticator code/);
    assert.doesNotMatch(page, /id="password"/);
    const stepped = await post(browser, two.reached.url, { otp: totpAt(secret, d.clock.now()) });
    assert.equal(stepped.status, 303);
    const back2 = await browser.follow(new URL(stepped.headers.get('location')!, d.url), second);
    assert.equal(back2.response, undefined);
    assert.deepEqual((await redeem(two, back2.url)).amr, ['pwd', 'otp']);

    // Ended on the server: the provider's cookie is still there, yet the sign-in starts again.
    await d.composition.services.ssoSessions.endAllForUser(d.customer.customerId, user, SYSTEM);
    const after = await authorize(d, browser, plain, first);
    assert.ok(after.reached.response, 'signed in without a session');
    assert.match(after.reached.url.pathname, /\/sign-in\//);
    assert.match(await after.reached.response.text(), /Username or e-mail/);

    // prompt=none with no SSO session: login_required at the application, no page.
    const config = await discover(d.issuer, plain.uuid, plain.clientSecret!);
    const silent = await authorizationRequest(config, first, 'openid');
    silent.url.searchParams.set('prompt', 'none');
    const answer = await browser.follow(silent.url, first);
    assert.equal(answer.response, undefined);
    assert.equal(answer.url.searchParams.get('error'), 'login_required');

    // An interaction that is gone (expired, or never this browser's): a page saying to start again, no redirect.
    const gone = await new Browser().fetch(`${d.issuer}/interaction/${'x'.repeat(21)}`);
    assert.equal(gone.status, 403);
    assert.equal(gone.headers.get('location'), null);
    assert.match(await gone.text(), /<h1>This sign-in has ended<\/h1>/);
  });
});
