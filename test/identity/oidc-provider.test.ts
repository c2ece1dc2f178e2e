/**
 * The customer's OpenID provider with a real relying party (openid-client) over real sockets:
 * discovery, authorization code + PKCE after the magic-link landing's beginProviderLogin, the code
 * redeemed with the application's client secret, the id_token verified against the JWKS from
 * discovery (the same keys that verify the JWT application's id_token). The test plays the browser.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Fastify from 'fastify';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { simpleParser } from 'mailparser';
import * as client from 'openid-client';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import type { ProviderLogin } from '../../src/identity/oidc/service.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { createStore, type Store } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { adminClient, build, testEnv, type AdminClient } from '../helpers/app.ts';
import { authorizationRequest, Browser, discover } from '../helpers/relying-party.ts';
import { freePort } from '../helpers/ports.ts';
import { describeEachStore, postgresSchema, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

// Never contacted: the flow stops at the redirect and hands its URL to the relying party.
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

interface Node {
  composition: Composition;
  origin: string;
}

interface Deployment {
  publicUrl: string;
  nodes: Node[];
  admin(customer: CreatedCustomer): AdminClient;
  newCustomer(): Promise<CreatedCustomer>;
}

/** Stores on one database: `count` of them (SQLite: one file; PostgreSQL: the process's schema). */
async function openStores(t: TestContext, kind: StoreKind, count: number): Promise<Store[]> {
  if (kind === 'postgres') {
    const stores = [await postgresStore()];
    const schema = await postgresSchema();
    for (let i = 1; i < count; i++) {
      const store = await createStore(postgresUrl!, { schema, poolSize: 3 });
      t.after(() => store.close());
      stores.push(store);
    }
    return stores;
  }
  const file = join(mkdtempSync(join(tmpdir(), 'latchkey-oidc-')), 'latchkey.sqlite');
  const stores: Store[] = [];
  for (let i = 0; i < count; i++) {
    const store = await createStore(file);
    await migrate(store);
    t.after(() => store.close());
    stores.push(store);
  }
  return stores;
}

/** `count` nodes on one database with one master key, behind one public URL (the first node's address). */
async function deploy(t: TestContext, kind: StoreKind, count = 1): Promise<Deployment> {
  const stores = await openStores(t, kind, count);
  const ports = await Promise.all(stores.map(() => freePort()));
  const publicUrl = `http://127.0.0.1:${ports[0]}`;
  const masterKey = randomBytes(32).toString('hex');
  const nodes: Node[] = [];
  for (const [index, store] of stores.entries()) {
    const composition = await compose(loadConfig(testEnv({ LATCHKEY_PUBLIC_URL: publicUrl, LATCHKEY_MASTER_KEY: masterKey })), { store });
    const identity = await composition.buildIdentityApp();
    await identity.listen({ port: ports[index], host: '127.0.0.1' });
    t.after(async () => { await identity.close(); await composition.close(); });
    nodes.push({ composition, origin: `http://127.0.0.1:${ports[index]}` });
  }
  const first = nodes[0]!.composition;
  const adminApp = await first.buildIdentityApp();
  t.after(() => adminApp.close());
  return {
    publicUrl,
    nodes,
    admin: (customer) => adminClient(adminApp, customer, createTestClock(Date.now())),
    newCustomer: () => first.services.customers.create({ email: `owner-${randomBytes(4).toString('hex')}@example.test` }),
  };
}

interface Tenant {
  customer: CreatedCustomer;
  issuer: string;
  applicationUuid: string;
  clientSecret: string;
  user: { id: number; username: string; email: string };
}

async function tenant(deployment: Deployment): Promise<Tenant> {
  const customer = await deployment.newCustomer();
  const admin = deployment.admin(customer);
  const customerKey = Number(customer.customerKey);
  const created = await admin.post('/admin/applications/create', { customerKey, name: 'Portal', type: 'OAUTH', redirectUris: [REDIRECT_URI], loginUrls: ['http://127.0.0.1:9/login'] });
  assert.equal(created.statusCode, 200, created.body);
  const { application, clientSecret } = created.json() as { application: { applicationUuid: string }; clientSecret: string };
  const username = `alice${randomBytes(3).toString('hex')}`;
  const userResponse = await admin.post('/admin/users/create', { customerKey, username, email: `${username}@example.test`, firstName: 'Alice', lastName: 'Liddell' });
  assert.equal(userResponse.statusCode, 200, userResponse.body);
  const user = await deployment.nodes[0]!.composition.services.users.findByLogin(customer.customerId, username);
  assert.ok(user);
  return {
    customer,
    issuer: `${deployment.publicUrl}/customers/${customer.customerKey}`,
    applicationUuid: application.applicationUuid,
    clientSecret,
    user: { id: user.id, username: user.username, email: user.email },
  };
}

/** Stands in for the magic-link landing's POST: what it does for an OAUTH application after consuming the link. */
async function land(t: TestContext, deployment: Deployment, browser: Browser, login: ProviderLogin): Promise<string[]> {
  const landing = Fastify();
  landing.post('/magic/token', async (_request, reply) => {
    await deployment.nodes[0]!.composition.services.oidc.beginProviderLogin(reply, login);
    return reply.code(303).header('location', 'http://127.0.0.1:9/login').send();
  });
  t.after(() => landing.close());
  const response = await landing.inject({ method: 'POST', url: '/magic/token' });
  assert.equal(response.statusCode, 303);
  const cookies = [response.headers['set-cookie'] ?? []].flat();
  for (const line of cookies) browser.store(new URL(`${deployment.publicUrl}/magic/token`), line);
  return cookies;
}

async function jwksOf(config: client.Configuration): Promise<JSONWebKeySet> {
  const response = await fetch(config.serverMetadata().jwks_uri!);
  assert.equal(response.status, 200);
  return await response.json() as JSONWebKeySet;
}

const loginOf = (who: Tenant, amr = ['email']): ProviderLogin => ({ customerId: who.customer.customerId, userId: who.user.id, applicationUuid: who.applicationUuid, amr });

describeEachStore('customer OpenID provider', (kind) => {
  test('discovery, code + PKCE after the landing, id_token verified against the discovered JWKS, claims, userinfo; signJwt verifies too', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const metadata = config.serverMetadata();
    assert.equal(metadata.issuer, alice.issuer);
    assert.equal(metadata.jwks_uri, `${alice.issuer}/jwks`);
    assert.ok(metadata.authorization_endpoint!.startsWith(`${alice.issuer}/`));
    assert.ok(metadata.token_endpoint!.startsWith(`${alice.issuer}/`));
    assert.deepStrictEqual(metadata.code_challenge_methods_supported, ['S256']);
    assert.deepStrictEqual(metadata.response_types_supported, ['code']);
    assert.deepStrictEqual(metadata.scopes_supported, ['openid', 'email', 'profile']);

    const browser = new Browser();
    const cookies = await land(t, deployment, browser, loginOf(alice));
    assert.equal(cookies.length, 1);
    assert.match(cookies[0]!, new RegExp(`^latchkey_login_ticket=[A-Za-z0-9_-]{43}; Path=/customers/${alice.customer.customerKey}/interaction; Max-Age=300; HttpOnly; SameSite=Lax$`));

    const request = await authorizationRequest(config, REDIRECT_URI);
    const { url, response } = await browser.follow(request.url, REDIRECT_URI);
    assert.equal(response, undefined, `stopped at ${url.href} with ${response?.status}: ${await response?.text()}`);
    const tokens = await client.authorizationCodeGrant(config, url, { pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce });
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');

    const jwks = await jwksOf(config);
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token!, createLocalJWKSet(jwks), { issuer: alice.issuer, audience: alice.applicationUuid });
    assert.equal(protectedHeader.alg, 'RS256');
    assert.equal(protectedHeader.kid, jwks.keys[0]!.kid);
    assert.equal(payload.sub, String(alice.user.id));
    assert.equal(payload.email, alice.user.email);
    assert.equal(payload.preferred_username, alice.user.username);
    assert.deepStrictEqual(payload.amr, ['email']);
    assert.equal(payload.nonce, request.nonce);

    const userinfo = await client.fetchUserInfo(config, tokens.access_token, String(alice.user.id));
    assert.deepStrictEqual(userinfo, {
      sub: String(alice.user.id), email: alice.user.email, email_verified: false, preferred_username: alice.user.username,
      name: 'Alice Liddell', given_name: 'Alice', family_name: 'Liddell',
    });

    // The JWT application's id_token is signed with the same key: it verifies against this JWKS.
    const jwt = await deployment.nodes[0]!.composition.services.signingKeys.signJwt(alice.customer.customerId, { iss: alice.issuer, aud: 'jwt-app', sub: String(alice.user.id) }, { ttlSeconds: 300 });
    await jwtVerify(jwt, createLocalJWKSet(jwks), { issuer: alice.issuer, audience: 'jwt-app' });

    // The ticket was single use: a second authorization with a fresh browser and the same ticket goes to the sign-in page.
    const replay = new Browser();
    const again = await authorizationRequest(config, REDIRECT_URI);
    const second = await replay.follow(again.url, `${alice.issuer}/interaction/`);
    const secondInteraction = await replay.fetch(second.url, {}, [cookies[0]!.split(';')[0]!]);
    assert.equal(secondInteraction.status, 303);
    assert.match(secondInteraction.headers.get('location') ?? '', new RegExp(`^/customers/${alice.customer.customerKey}/sign-in/[A-Za-z0-9_-]{43}$`));
  });

  test('without a ticket or a session the flow goes to the hosted sign-in\'s first step', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const browser = new Browser();
    const request = await authorizationRequest(config, REDIRECT_URI);
    const { url, response } = await browser.follow(request.url, REDIRECT_URI);
    assert.ok(response, 'the flow reached the application without a sign-in');
    assert.match(url.pathname, new RegExp(`^/customers/${alice.customer.customerKey}/sign-in/[A-Za-z0-9_-]{43}$`));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.match(response.headers.get('content-security-policy') ?? '', /^default-src 'none'; .*form-action 'self' http:\/\/127\.0\.0\.1:9; frame-ancestors 'none'/);
    assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
    const html = await response.text();
    assert.ok(html.includes('<h1>Sign in to Portal</h1>'), html);
    assert.ok(html.includes('autocomplete="username webauthn"'), html);
    // Nothing from elsewhere: the only script is our own passkey script (step 1 offers a passkey to everyone).
    assert.ok(!/<(link|img)\b/i.test(html));
    assert.deepEqual(html.match(/<script\b[^>]*>/gi) ?? [], html.match(/<script src="\/assets\/passkeys\.js"[^>]*>/gi) ?? []);
  });

  test('a ticket of customer A, or for another application, does not sign in at customer B or that application', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const bob = await tenant(deployment);
    const browser = new Browser();
    const [ticketCookie] = await land(t, deployment, browser, loginOf(alice));
    const ticket = ticketCookie!.split(';')[0]!;

    // At B's provider, with A's ticket sent along by hand (a browser would not even send it: its path is A's).
    const bobConfig = await discover(bob.issuer, bob.applicationUuid, bob.clientSecret);
    const atBob = await authorizationRequest(bobConfig, REDIRECT_URI);
    const bobFlow = await browser.follow(atBob.url, `${bob.issuer}/interaction/`);
    const forced = await browser.fetch(bobFlow.url, {}, [ticket]);
    assert.equal(forced.status, 303);
    assert.match(forced.headers.get('location') ?? '', new RegExp(`^/customers/${bob.customer.customerKey}/sign-in/`));

    // Another OAUTH application of A: the ticket is for Portal only.
    const admin = deployment.admin(alice.customer);
    const other = await admin.post('/admin/applications/create', { customerKey: Number(alice.customer.customerKey), name: 'Other', type: 'OAUTH', redirectUris: [REDIRECT_URI] });
    const { application, clientSecret } = other.json() as { application: { applicationUuid: string }; clientSecret: string };
    const otherConfig = await discover(alice.issuer, application.applicationUuid, clientSecret);
    const atOther = await authorizationRequest(otherConfig, REDIRECT_URI);
    const otherFlow = await browser.follow(atOther.url, REDIRECT_URI);
    assert.equal(otherFlow.response?.status, 200);
    assert.match(otherFlow.url.pathname, /\/sign-in\//);

    // Neither attempt spent it: at A, for Portal, it still signs in.
    const aliceConfig = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const atAlice = await authorizationRequest(aliceConfig, REDIRECT_URI);
    const aliceFlow = await browser.follow(atAlice.url, REDIRECT_URI);
    assert.equal(aliceFlow.response, undefined);
    const tokens = await client.authorizationCodeGrant(aliceConfig, aliceFlow.url, { pkceCodeVerifier: atAlice.codeVerifier, expectedState: atAlice.state, expectedNonce: atAlice.nonce });
    assert.equal(tokens.claims()!.sub, String(alice.user.id));
  });

  test('unknown client_id, a client of another customer, no PKCE, a wrong secret and an unknown customer are refused', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const bob = await tenant(deployment);
    const browser = new Browser();
    const authorize = (issuer: string, params: Record<string, string>) => browser.fetch(`${issuer}/auth?${new URLSearchParams(params)}`);
    const base = { response_type: 'code', scope: 'openid', redirect_uri: REDIRECT_URI, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' };

    for (const clientId of ['6f1c2b1e-0000-4000-8000-000000000000', bob.applicationUuid, alice.applicationUuid.toUpperCase(), 'not-a-uuid']) {
      const response = await authorize(alice.issuer, { ...base, client_id: clientId });
      assert.equal(response.status, 400, clientId);
      const html = await response.text();
      assert.ok(html.includes('invalid_client'), html);
      assert.ok(!html.includes('<script'), html);
    }
    const { code_challenge: _c, code_challenge_method: _m, ...noPkce } = base;
    const withoutPkce = await authorize(alice.issuer, { ...noPkce, client_id: alice.applicationUuid });
    assert.equal(withoutPkce.status, 303);
    const errorRedirect = new URL(withoutPkce.headers.get('location')!);
    assert.equal(errorRedirect.searchParams.get('error'), 'invalid_request');

    const wrongSecret = await fetch(`${alice.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${alice.applicationUuid}:${bob.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI, code_verifier: 'x'.repeat(43) }),
    });
    assert.equal(wrongSecret.status, 401);
    assert.equal((await wrongSecret.json() as { error: string }).error, 'invalid_client');

    for (const path of ['/customers/999999999999/.well-known/openid-configuration', '/customers/abc/.well-known/openid-configuration', '/customers/999999999999/interaction/x']) {
      const response = await fetch(`${deployment.publicUrl}${path}`);
      assert.equal(response.status, 404, path);
    }
  });

  test('redirect URIs are the registered strings exactly: case, port, dot segments, backslashes, whitespace are refused, never redirected to (issue 22 item 7)', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const registered = 'https://app.example.com/cb';
    const created = await deployment.admin(alice.customer).post('/admin/applications/create', {
      customerKey: Number(alice.customer.customerKey), name: 'Exact', type: 'OAUTH', redirectUris: [registered], loginUrls: ['https://app.example.com/login'],
    });
    assert.equal(created.statusCode, 200, created.body);
    const { application: { applicationUuid }, clientSecret } = created.json() as { application: { applicationUuid: string }; clientSecret: string };
    const base = { client_id: applicationUuid, response_type: 'code', scope: 'openid', state: 'st-1', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' };
    const browser = new Browser();
    const authorize = (params: Record<string, string>) => browser.fetch(`${alice.issuer}/auth?${new URLSearchParams(params)}`);
    const post = (path: string, params: Record<string, string>, headers: Record<string, string> = {}) => fetch(`${alice.issuer}${path}`, {
      method: 'POST', redirect: 'manual', body: new URLSearchParams(params), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
    const clientAuth = { authorization: `Basic ${Buffer.from(`${applicationUuid}:${clientSecret}`).toString('base64')}` };

    // The registered string itself: accepted (on to the sign-in interaction), by GET, POST and pushed request.
    const accepted = await authorize({ ...base, redirect_uri: registered });
    assert.equal(accepted.status, 303, await accepted.text());
    assert.match(accepted.headers.get('location')!, new RegExp(`/customers/${alice.customer.customerKey}/interaction/`));
    assert.equal((await post('/auth', { ...base, redirect_uri: registered })).status, 303);
    const pushed = await post('/request', { ...base, redirect_uri: registered }, clientAuth);
    assert.equal(pushed.status, 201, await pushed.clone().text());

    const variants = [
      'https://APP.example.com/cb', 'HTTPS://app.example.com/cb', 'https://app.example.com:443/cb', 'https://app.example.com/x/../cb',
      'https://app.example.com/./cb', 'https://app.example.com\\cb', 'https:\\\\app.example.com/cb', 'https://app.exa\tmple.com/cb',
      'https://app.example.com/c\nb', ' https://app.example.com/cb', 'https://app.example.com/cb ', 'https://app.example.com/%63b',
      'https://app.example.com/cb/', 'https://app.example.com/cb?', 'https://app.example.com./cb',
    ];
    const refusal = 'invalid_redirect_uri: redirect_uri did not match any of the client&#39;s registered redirect_uris';
    for (const redirectUri of variants) {
      const label = JSON.stringify(redirectUri);
      // GET, with and without PKCE: an earlier check's error is not redirected to the variant either.
      const { code_challenge: _c, code_challenge_method: _m, ...noPkce } = base;
      for (const params of [{ ...base, redirect_uri: redirectUri }, { ...noPkce, redirect_uri: redirectUri }]) {
        const response = await authorize(params);
        assert.equal(response.status, 400, `${label}: ${response.status} ${response.headers.get('location')}`);
        assert.equal(response.headers.get('location'), null, label);
        assert.match(response.headers.get('content-type')!, /^text\/html/, label);
        assert.equal(response.headers.get('cache-control'), 'no-store', label);
        assert.ok((await response.text()).includes(refusal), label);
      }
      const byPost = await post('/auth', { ...base, redirect_uri: redirectUri });
      assert.equal(byPost.status, 400, `${label} (POST): ${byPost.status} ${byPost.headers.get('location')}`);
      assert.ok((await byPost.text()).includes(refusal), label);
      const byPar = await post('/request', { ...base, redirect_uri: redirectUri }, clientAuth);
      assert.equal(byPar.status, 400, `${label} (PAR)`);
      // The pushed-request endpoint names it invalid_request, as oidc-provider does for any unregistered URI.
      assert.deepStrictEqual(await byPar.json(), { error: 'invalid_request', error_description: "redirect_uri did not match any of the client's registered redirect_uris" });
    }
  });

  test('no CORS: discovery, JWKS, token and userinfo send no Access-Control header for a foreign Origin, preflights included (issue 22 item 8)', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const browser = new Browser();
    await land(t, deployment, browser, loginOf(alice));
    const request = await authorizationRequest(config, REDIRECT_URI);
    const { url } = await browser.follow(request.url, REDIRECT_URI);
    const code = url.searchParams.get('code');
    assert.ok(code, url.href);

    const origin = 'https://evil.example';
    const corsHeaders = (response: Response) => [...response.headers.keys()].filter((name) => name.startsWith('access-control-'));
    const clientAuth = `Basic ${Buffer.from(`${alice.applicationUuid}:${alice.clientSecret}`).toString('base64')}`;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };

    for (const path of ['/.well-known/openid-configuration', '/jwks']) {
      const response = await fetch(`${alice.issuer}${path}`, { headers: { origin } });
      assert.equal(response.status, 200, path);
      assert.deepStrictEqual(corsHeaders(response), [], path);
    }
    for (const [path, method] of [['/.well-known/openid-configuration', 'GET'], ['/jwks', 'GET'], ['/token', 'POST'], ['/me', 'GET'], ['/me', 'POST']] as const) {
      const preflight = await fetch(`${alice.issuer}${path}`, {
        method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
      });
      assert.deepStrictEqual(corsHeaders(preflight), [], `OPTIONS ${path}`);
    }

    // A token request sent from a foreign page (it carries the Origin) is refused, and says so without CORS headers.
    const tokenBody = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: request.codeVerifier });
    const fromPage = await fetch(`${alice.issuer}/token`, { method: 'POST', headers: { ...form, authorization: clientAuth, origin }, body: tokenBody });
    assert.equal(fromPage.status, 400);
    assert.deepStrictEqual(corsHeaders(fromPage), []);
    assert.deepStrictEqual(await fromPage.json(), { error: 'invalid_request', error_description: `origin ${origin} not allowed for client: ${alice.applicationUuid}` });

    // The application's server (no Origin) redeems the same code.
    const redeemed = await fetch(`${alice.issuer}/token`, { method: 'POST', headers: { ...form, authorization: clientAuth }, body: tokenBody });
    assert.equal(redeemed.status, 200, await redeemed.clone().text());
    assert.deepStrictEqual(corsHeaders(redeemed), []);
    const { access_token: accessToken } = await redeemed.json() as { access_token: string };

    const userinfoFromPage = await fetch(`${alice.issuer}/me`, { headers: { authorization: `Bearer ${accessToken}`, origin } });
    assert.equal(userinfoFromPage.status, 400);
    assert.deepStrictEqual(corsHeaders(userinfoFromPage), []);
    const userinfo = await fetch(`${alice.issuer}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
    assert.equal(userinfo.status, 200);
    assert.deepStrictEqual(corsHeaders(userinfo), []);
  });

  test('the private key is not in the database in clear; provider state is shared: a flow moves between two nodes', async (t) => {
    const deployment = await deploy(t, kind, 2);
    const [nodeA, nodeB] = deployment.nodes as [Node, Node];
    const alice = await tenant(deployment);
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const browser = new Browser();
    await land(t, deployment, browser, loginOf(alice, ['email', 'otp']));
    // The authorization request on node A, the interaction and the resume on node B, the code redeemed at A.
    const request = await authorizationRequest(config, REDIRECT_URI);
    const first = await browser.fetch(request.url);
    assert.equal(first.status, 303);
    browser.route = (url) => new URL(`${url.pathname}${url.search}`, nodeB.origin);
    const { url, response } = await browser.follow(new URL(first.headers.get('location')!, request.url), REDIRECT_URI);
    assert.equal(response, undefined, `stopped at ${url.href}`);
    const tokens = await client.authorizationCodeGrant(config, url, { pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce });
    const jwksB = await (await fetch(`${nodeB.origin}/customers/${alice.customer.customerKey}/jwks`)).json() as JSONWebKeySet;
    const { payload } = await jwtVerify(tokens.id_token!, createLocalJWKSet(jwksB), { issuer: alice.issuer, audience: alice.applicationUuid });
    assert.deepStrictEqual(payload.amr, ['email', 'otp']);

    const { db } = nodeA.composition.store;
    const privateJwk = (await nodeB.composition.services.signingKeys.privateJwks(alice.customer.customerId)).keys[0]!;
    const dump = JSON.stringify([
      await db.selectFrom('customer_signing_keys').selectAll().execute(),
      await db.selectFrom('oidc_models').selectAll().execute(),
    ]);
    for (const part of [privateJwk.d, privateJwk.p, privateJwk.q]) assert.ok(!dump.includes(part!), 'a private key part is in the database in clear');
    assert.ok(!dump.includes(alice.clientSecret), 'the client secret is in the database');
  });

  test('behind an https public URL with a path: endpoints from the configuration (never the Host header), Secure SameSite=Lax cookies on the issuer path', async (t) => {
    const app = await build(t, kind, { LATCHKEY_PUBLIC_URL: 'https://login.example.test/prefix' });
    const key = app.customer.customerKey;
    const issuer = `https://login.example.test/prefix/customers/${key}`;
    const created = await app.admin.post('/admin/applications/create', { customerKey: Number(key), name: 'Portal', type: 'OAUTH', redirectUris: [REDIRECT_URI] });
    const { applicationUuid } = (created.json() as { application: { applicationUuid: string } }).application;
    const spoofed = { host: 'evil.test', 'x-forwarded-host': 'evil.test', 'x-forwarded-proto': 'http' };

    const discovery = await app.identity.inject({ method: 'GET', url: `/customers/${key}/.well-known/openid-configuration`, headers: spoofed });
    assert.equal(discovery.statusCode, 200);
    const metadata = discovery.json() as Record<string, string>;
    assert.equal(metadata.issuer, issuer);
    assert.equal(metadata.authorization_endpoint, `${issuer}/auth`);
    assert.equal(metadata.token_endpoint, `${issuer}/token`);
    assert.equal(metadata.jwks_uri, `${issuer}/jwks`);
    assert.equal(discovery.headers['cache-control'], 'no-store');

    const authorize = await app.identity.inject({
      method: 'GET',
      url: `/customers/${key}/auth?${new URLSearchParams({ client_id: applicationUuid, response_type: 'code', scope: 'openid', redirect_uri: REDIRECT_URI, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      headers: spoofed,
    });
    assert.equal(authorize.statusCode, 303, authorize.body);
    const location = String(authorize.headers.location);
    assert.match(location, new RegExp(`^/prefix/customers/${key}/interaction/[A-Za-z0-9_-]+$`));
    const cookies = [authorize.headers['set-cookie'] ?? []].flat();
    assert.ok(cookies.length > 0);
    for (const cookie of cookies) {
      const attributes = cookie.toLowerCase().split(/;\s*/);
      assert.ok(attributes.includes('secure') && attributes.includes('httponly') && attributes.includes('samesite=lax'), cookie);
      assert.ok(attributes.some((a) => a.startsWith(`path=/prefix/customers/${key}/`)), cookie);
    }

    const landing = Fastify();
    landing.post('/magic/token', async (_request, reply) => {
      await app.composition.services.oidc.beginProviderLogin(reply, { customerId: app.customer.customerId, userId: 1, applicationUuid, amr: ['email'] });
      return reply.code(303).header('location', '/').send();
    });
    t.after(() => landing.close());
    const landed = await landing.inject({ method: 'POST', url: '/magic/token' });
    assert.match(String(landed.headers['set-cookie']), new RegExp(`^latchkey_login_ticket=[A-Za-z0-9_-]{43}; Path=/prefix/customers/${key}/interaction; Max-Age=300; HttpOnly; SameSite=Lax; Secure$`));
    assert.equal(app.composition.services.oidc.customerIssuer(key), issuer);
  });

  test('a disabled user: the ticket does not sign in, and tokens issued before stop resolving to an account', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const admin = deployment.admin(alice.customer);
    const customerKey = Number(alice.customer.customerKey);
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);

    const browser = new Browser();
    await land(t, deployment, browser, loginOf(alice));
    const request = await authorizationRequest(config, REDIRECT_URI);
    const signedIn = await browser.follow(request.url, REDIRECT_URI);
    const tokens = await client.authorizationCodeGrant(config, signedIn.url, { pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce });

    assert.equal((await admin.post('/admin/users/disable', { customerKey, username: alice.user.username })).statusCode, 200);
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, String(alice.user.id)));
    // The provider session is no way back in: the next authorization asks the user to sign in again.
    const again = await authorizationRequest(config, REDIRECT_URI);
    const stopped = await browser.follow(again.url, REDIRECT_URI);
    assert.equal(stopped.response?.status, 200, `${stopped.url.href}: ${await stopped.response?.text()}`);
    assert.match(stopped.url.pathname, /\/sign-in\//);

    const fresh = new Browser();
    await land(t, deployment, fresh, loginOf(alice));
    const withTicket = await authorizationRequest(config, REDIRECT_URI);
    const refused = await fresh.follow(withTicket.url, REDIRECT_URI);
    assert.equal(refused.response?.status, 200);
    assert.match(refused.url.pathname, /\/sign-in\//);
  });

  test('single use under concurrency: of 10 consumptions of one ticket and 5 redemptions of one code, one each wins', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const { oidc } = deployment.nodes[0]!.composition.services;
    const [line] = await land(t, deployment, new Browser(), loginOf(alice));
    const value = line!.split(';')[0]!.split('=')[1]!;
    const consumed = await Promise.all(Array.from({ length: 10 }, () => oidc.consumeTicket(alice.customer.customerId, value, alice.applicationUuid)));
    assert.deepStrictEqual(consumed.filter(Boolean), [{ userId: alice.user.id, applicationUuid: alice.applicationUuid, amr: ['email'] }]);

    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const browser = new Browser();
    await land(t, deployment, browser, loginOf(alice));
    const request = await authorizationRequest(config, REDIRECT_URI);
    const { url } = await browser.follow(request.url, REDIRECT_URI);
    const code = url.searchParams.get('code')!;
    const redeem = () => fetch(`${alice.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${alice.applicationUuid}:${alice.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: request.codeVerifier }),
    }).then(async (response) => ({ status: response.status, body: await response.json() as { error?: string } }));
    const results = await Promise.all(Array.from({ length: 5 }, redeem));
    assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results));
    for (const failed of results.filter((r) => r.status !== 200)) assert.deepStrictEqual([failed.status, failed.body.error], [400, 'invalid_grant']);
  });

  test('end to end through the real landing: generate, the link from the mail, POST, then the application\'s code + PKCE flow', async (t) => {
    const deployment = await deploy(t, kind);
    const alice = await tenant(deployment);
    const { composition } = deployment.nodes[0]!;
    const admin = deployment.admin(alice.customer);
    const policy = await admin.post('/admin/policies/create', { customerKey: Number(alice.customer.customerKey), applicationUuid: alice.applicationUuid, firstFactor: 'MAGIC_LINK' });
    assert.equal(policy.statusCode, 200, policy.body);
    const generated = await admin.post('/admin/magiclink/generate', { username: alice.user.username, applicationUuid: alice.applicationUuid });
    assert.equal(generated.statusCode, 200, generated.body);

    // Without SMTP the mail is an .eml file under the data directory.
    await composition.mailWorker.runOnce();
    const outbox = join(composition.config.dataDir, 'outbox');
    const files = readdirSync(outbox).filter((name) => name.endsWith('.eml'));
    assert.equal(files.length, 1);
    const mail = await simpleParser(readFileSync(join(outbox, files[0]!)));
    const link = new RegExp(`${deployment.publicUrl}/magic/[A-Za-z0-9_-]+`).exec(mail.text ?? '')?.[0];
    assert.ok(link, 'the mail holds the link');

    const browser = new Browser();
    const landed = await browser.fetch(link, { method: 'POST' });
    assert.equal(landed.status, 303, await landed.text());
    assert.equal(landed.headers.get('location'), 'http://127.0.0.1:9/login');

    // The application (at its login URL) starts a standard authorization request: no question asked.
    const config = await discover(alice.issuer, alice.applicationUuid, alice.clientSecret);
    const request = await authorizationRequest(config, REDIRECT_URI);
    const { url, response } = await browser.follow(request.url, REDIRECT_URI);
    assert.equal(response, undefined, `stopped at ${url.href}`);
    const tokens = await client.authorizationCodeGrant(config, url, { pkceCodeVerifier: request.codeVerifier, expectedState: request.state, expectedNonce: request.nonce });
    const { payload } = await jwtVerify(tokens.id_token!, createLocalJWKSet(await jwksOf(config)), { issuer: alice.issuer, audience: alice.applicationUuid });
    assert.deepStrictEqual([payload.sub, payload.email, payload.preferred_username, payload.amr], [String(alice.user.id), alice.user.email, alice.user.username, ['email']]);
  });
});

