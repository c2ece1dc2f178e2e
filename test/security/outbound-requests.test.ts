/**
 * The only HTTP calls Latchkey makes are the site's calls to its configured OpenID provider (ASVS V13.2.4,
 * V13.2.5, V15.3.2). A redirect is never followed: the introspection request carries the client secret and
 * the token, user-info the token. A token cannot name a URL of its own for the site to fetch keys from.
 * Each "elsewhere" server below would answer as a real provider does, so a followed redirect or a fetched
 * key URL would turn into an accepted token, not only into a recorded request.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { createProviderVerifier, type ProviderVerifierOptions } from '../../src/site/protect/provider-token.ts';
import { Unauthenticated } from '../../src/lib/errors.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { closeServer, listen } from '../helpers/oidc-provider.ts';

const CLIENT = { id: 'latchkey-site', secret: 'site-client-secret-value' };
const USER = 'alice@example.test';

interface Stub { url: string; requests: Array<{ method: string; path: string; authorization?: string; body: string }> }

async function stub(t: TestContext, respond: (req: IncomingMessage, res: ServerResponse, self: Stub) => void): Promise<Stub> {
  const self: Stub = { url: '', requests: [] };
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      self.requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body });
      respond(req, res, self);
    });
  });
  self.url = await listen(server);
  t.after(() => closeServer(server));
  return self;
}

const json = (res: ServerResponse, body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** A key pair, its public JWKS, and ID tokens signed with it. */
async function signer(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return {
    jwks: { keys: [jwk] },
    idToken: (issuer: string, header: Record<string, unknown> = {}) => new SignJWT({ email: USER, email_verified: true })
      .setProtectedHeader({ alg: 'RS256', kid, ...header })
      .setIssuer(issuer).setAudience(CLIENT.id).setSubject('u1').setIssuedAt().setExpirationTime('5m')
      .sign(privateKey),
  };
}

/** A real provider elsewhere: discovery, JWKS, introspection and user-info that accept every token for USER. */
async function providerElsewhere(t: TestContext, jwks: { keys: JWK[] }): Promise<Stub> {
  return stub(t, (req, res, self) => {
    if (req.url === '/.well-known/openid-configuration') {
      json(res, { issuer: self.url, jwks_uri: `${self.url}/jwks`, introspection_endpoint: `${self.url}/introspect`, userinfo_endpoint: `${self.url}/me` });
    } else if (req.url === '/jwks') json(res, jwks);
    else if (req.url === '/introspect') json(res, { active: true, sub: 'u1', email: USER });
    else json(res, { sub: 'u1', email: USER, email_verified: true });
  });
}

/** Answers every request with a 302 to the same path on `target`. */
async function redirector(t: TestContext, target: () => string, status = 302): Promise<Stub> {
  return stub(t, (req, res) => res.writeHead(status, { location: `${target()}${req.url}` }).end());
}

function options(overrides: Partial<ProviderVerifierOptions>): ProviderVerifierOptions {
  return {
    issuer: undefined, introspectionUrl: undefined, userinfoUrl: undefined,
    clientId: CLIENT.id, clientSecret: CLIENT.secret, userClaim: 'email',
    timeoutMs: 3000, cacheSeconds: 0, clock: createTestClock(Date.now()),
    ...overrides,
  };
}

async function refused(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (error: unknown) => error instanceof Unauthenticated && error.reason === 'INVALID_TOKEN');
}

test('the site\'s provider calls never follow a redirect: introspection, user-info, discovery and the JWKS; the target hears nothing', async (t) => {
  const keys = await signer('k1');
  const elsewhere = await providerElsewhere(t, keys.jwks);

  // The control: straight to the provider elsewhere, each way accepts the token. The redirected calls below
  // would reach the very same answers.
  assert.equal((await createProviderVerifier(options({ introspectionUrl: `${elsewhere.url}/introspect` })).verify('access_token', 'opaque-1')).user, USER);
  assert.equal((await createProviderVerifier(options({ issuer: elsewhere.url })).verify('id_token', await keys.idToken(elsewhere.url))).user, USER);
  elsewhere.requests.length = 0;

  for (const status of [301, 302, 307, 308]) {
    const hop = await redirector(t, () => elsewhere.url, status);
    await refused(createProviderVerifier(options({ introspectionUrl: `${hop.url}/introspect` })).verify('access_token', 'opaque-1'));
    await refused(createProviderVerifier(options({ userinfoUrl: `${hop.url}/me`, clientId: undefined, clientSecret: undefined })).verify('access_token', 'opaque-1'));
    await refused(createProviderVerifier(options({ issuer: hop.url })).verify('access_token', 'opaque-1'));
    assert.deepEqual(hop.requests.map(({ path }) => path), ['/introspect', '/me', '/.well-known/openid-configuration'], `${status}`);
    // The introspection request did carry the secret to the configured URL, and only there.
    assert.match(String(hop.requests[0]?.authorization), /^Basic /);
  }

  // Discovery at the configured issuer names a JWKS URL that redirects elsewhere.
  const jwksHop = await redirector(t, () => elsewhere.url);
  const issuer = await stub(t, (req, res, self) => json(res, { issuer: self.url, jwks_uri: `${jwksHop.url}/jwks` }));
  await refused(createProviderVerifier(options({ issuer: issuer.url })).verify('id_token', await keys.idToken(issuer.url)));
  assert.deepEqual(jwksHop.requests.map(({ path }) => path), ['/jwks']);

  assert.deepEqual(elsewhere.requests, [], 'no redirect was followed to the other server');
});

test('an ID token cannot name where its keys are: jku, x5u and jwk headers are not fetched or used', async (t) => {
  const configured = await signer('configured');
  const attacker = await signer('attacker');
  const elsewhere = await providerElsewhere(t, attacker.jwks);
  const issuer = await stub(t, (req, res, self) => {
    if (req.url === '/jwks') json(res, configured.jwks);
    else json(res, { issuer: self.url, jwks_uri: `${self.url}/jwks` });
  });
  const verifier = createProviderVerifier(options({ issuer: issuer.url }));
  assert.equal((await verifier.verify('id_token', await configured.idToken(issuer.url))).user, USER, 'the control: the configured key is accepted');

  for (const header of [
    { jku: `${elsewhere.url}/jwks` },
    { x5u: `${elsewhere.url}/cert.pem` },
    { jwk: attacker.jwks.keys[0] },
    { jku: `${elsewhere.url}/jwks`, kid: 'configured' },
  ]) {
    await refused(verifier.verify('id_token', await attacker.idToken(issuer.url, header)));
  }
  assert.deepEqual(elsewhere.requests, [], 'no URL a token named was fetched');
});
