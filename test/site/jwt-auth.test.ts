/**
 * The JWT method end to end: a token from the token endpoint opens the posts; forged, altered,
 * expired and malformed tokens get the spec's errors; a disabled, deleted or re-passworded user's
 * token stops at once; RS256 publishes its key as a JWKS; the header name is configurable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import type { JWTPayload } from 'jose';
import { SYSTEM } from '../../src/audit/context.ts';
import { loadSiteJwtKeys } from '../../src/site/protect/jwt-keys.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, bearer, buildSite, normalisePost, POSTS_PATH, SEEDED_POSTS, siteError, type SiteTest } from './helpers.ts';

if (postgresUrl) await postgresStore();

const SITE = 'http://127.0.0.1:8081';
const AUDIENCE = `${SITE}/cms-json`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Claims as the site writes them, for forging tokens that only one claim or the key makes wrong. */
function claimsFor(s: SiteTest, userId: number, overrides: JWTPayload = {}): JWTPayload {
  const iat = Math.floor(s.clock.now() / 1000);
  return { sub: String(userId), name: 'alice', ver: 1, iat, exp: iat + 3600, iss: SITE, aud: AUDIENCE, jti: 'a-jti', ...overrides };
}

async function hsKey(s: SiteTest) {
  return (await loadSiteJwtKeys({ alg: 'HS256', masterKey: s.composition.masterKey, dataDir: s.composition.config.dataDir })).signingKey;
}

const getPosts = (s: SiteTest, token: string) => s.get(POSTS_PATH, bearer(token));

describeEachStore('site JWT method', (kind) => {
  test('a token from the token endpoint lists the posts; its claims are the documented ones', async (t) => {
    const s = await buildSite(t, kind);
    const alice = await s.addUser('alice');
    const token = await s.token('alice');

    assert.deepEqual(decodeProtectedHeader(token), { alg: 'HS256', typ: 'JWT' });
    const claims = decodeJwt(token);
    assert.match(String(claims.jti), UUID);
    const iat = Math.floor(s.clock.now() / 1000);
    assert.deepEqual({ ...claims, jti: 'J' }, { sub: String(alice.id), name: 'alice', ver: 1, iss: SITE, aud: AUDIENCE, iat, exp: iat + 3600, jti: 'J' });

    const res = await getPosts(s, token);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-wp-total'], '3');
    assert.equal(res.headers['x-wp-totalpages'], '1');
    assert.deepEqual(res.json().map((p: Record<string, unknown>) => normalisePost(p)), SEEDED_POSTS);
  });

  test('alg none, another algorithm and a bad signature: 401 INVALID_SIGNATURE', async (t) => {
    const s = await buildSite(t, kind);
    const alice = await s.addUser('alice');
    const claims = claimsFor(s, alice.id);
    // The unsecured forms (an empty signature segment, any case of "none"): the documented 401 row.
    for (const alg of ['none', 'None', 'NONE']) {
      const none = `${b64({ alg, typ: 'JWT' })}.${b64(claims)}.`;
      assertJson(await getPosts(s, none), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.'));
    }
    const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}.`;
    assertJson(await getPosts(s, unsigned), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT signature is invalid.'));
    // Two parts and no trailing dot: not a JWT's shape.
    assertJson(await getPosts(s, `${b64({ alg: 'none' })}.${b64(claims)}`), 400, siteError(400, 'SEGMENT_FAULT', 'JWT format is incorrect.'));
    const noneSigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.AAAA`;
    assertJson(await getPosts(s, noneSigned), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.'));

    const key = await hsKey(s);
    const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', typ: 'JWT' }).sign(key);
    assertJson(await getPosts(s, hs512), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.'));

    const good = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
    assert.equal((await getPosts(s, good)).statusCode, 200, 'the forged claims are otherwise acceptable');
    const [h, p, sig] = good.split('.');
    const flipped = `${h}.${p}.${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BA' : 'AA'}`;
    assertJson(await getPosts(s, flipped), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT signature is invalid.'));
    const otherPayload = `${h}.${b64({ ...claims, name: 'mallory' })}.${sig}`;
    assertJson(await getPosts(s, otherPayload), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT signature is invalid.'));
  });

  test('wrong issuer, wrong audience, expired (after the leeway), not yet valid: 400 INVALID_TOKEN', async (t) => {
    const s = await buildSite(t, kind);
    const alice = await s.addUser('alice');
    const key = await hsKey(s);
    const sign = (overrides: JWTPayload) => new SignJWT(claimsFor(s, alice.id, overrides)).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
    assertJson(await getPosts(s, await sign({ iss: 'https://evil.test' })), 400, siteError(400, 'INVALID_TOKEN', 'JWT issuer is invalid.'));
    assertJson(await getPosts(s, await sign({ aud: 'https://evil.test' })), 400, siteError(400, 'INVALID_TOKEN', 'JWT audience is invalid.'));
    const now = Math.floor(s.clock.now() / 1000);
    assertJson(await getPosts(s, await sign({ iat: now + 120, exp: now + 3720 })), 400, siteError(400, 'INVALID_TOKEN', 'JWT is not yet valid.'));

    const token = await s.token('alice');
    s.clock.advance((3600 + 29) * 1000);
    assert.equal((await getPosts(s, token)).statusCode, 200, 'inside the 30 s leeway');
    s.clock.advance(1000);
    assertJson(await getPosts(s, token), 400, siteError(400, 'INVALID_TOKEN', 'JWT has expired.'));
  });

  test('malformed tokens: 400 SEGMENT_FAULT', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const token = await s.token('alice');
    const segmentFault = siteError(400, 'SEGMENT_FAULT', 'JWT format is incorrect.');
    for (const bad of ['a.b', 'a.b.c.d', `${token}.x`, 'x.y.z', `${token.split('.')[0]}.!!!.${token.split('.')[2]}`, '.', 'ü.ü.ü', `${token}, Bearer ${token}`]) {
      assertJson(await getPosts(s, bad), 400, segmentFault);
    }
    // Repeated Authorization headers: Node keeps the first (http.IncomingMessage#headers), light-my-request
    // (6.6) joins them with ", "; either way a bad first one is refused.
    assertJson(await s.get(POSTS_PATH, { authorization: ['Bearer x.y.z', `Bearer ${token}`] }), 400, segmentFault);
  });

  test('a wrong scheme is 400, a missing header 401', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const token = await s.token('alice');
    assertJson(await s.get(POSTS_PATH, { authorization: `JWT ${token}` }), 400,
      siteError(400, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'Authorization header token type must be Bearer.'));
    assertJson(await s.get(POSTS_PATH, { authorization: token }), 400,
      siteError(400, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'Authorization header token type must be Bearer.'));
    const missing = await s.get(POSTS_PATH);
    assertJson(missing, 401, siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'Authorization header is missing.'));
    assert.equal(missing.headers['www-authenticate'], 'Bearer realm="site"');
  });

  test('disabling the user stops the token at once, and enabling does not revive it', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const token = await s.token('alice');
    const ck = Number(s.customer.customerKey);
    assert.equal((await getPosts(s, token)).statusCode, 200);
    assert.equal((await s.admin.post('/admin/users/disable', { customerKey: ck, username: 'alice' })).statusCode, 200);
    const revoked = siteError(400, 'INVALID_TOKEN', 'JWT has been revoked.');
    assertJson(await getPosts(s, token), 400, revoked);
    assert.equal((await s.admin.post('/admin/users/enable', { customerKey: ck, username: 'alice' })).statusCode, 200);
    assertJson(await getPosts(s, token), 400, revoked);
    assert.equal((await getPosts(s, await s.token('alice'))).statusCode, 200, 'a new token works');
  });

  test('a password change and a deletion stop the user\'s tokens', async (t) => {
    const s = await buildSite(t, kind);
    const alice = await s.addUser('alice');
    await s.addUser('bob');
    const ck = Number(s.customer.customerKey);
    const aliceToken = await s.token('alice');
    const bobToken = await s.token('bob');
    const changed = await s.admin.post('/admin/users/change-password', { customerKey: String(ck), username: 'alice', oldPassword: alice.password, password: 'a-brand-new-passphrase-9' });
    assert.equal(changed.statusCode, 200, changed.body);
    const revoked = siteError(400, 'INVALID_TOKEN', 'JWT has been revoked.');
    assertJson(await getPosts(s, aliceToken), 400, revoked);
    assert.equal((await getPosts(s, bobToken)).statusCode, 200, "another user's token is untouched");
    assert.equal((await s.admin.post('/admin/users/delete', { customerKey: ck, username: 'bob' })).statusCode, 200);
    assertJson(await getPosts(s, bobToken), 400, revoked);
  });

  test("another customer's token (same master key, other site) names no user here", async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const other = await s.newCustomer();
    const otherSite = await s.composition.buildSiteApp({ customerKey: other.customer.customerKey });
    t.after(() => otherSite.close());
    await s.composition.services.users.create(other.customer.customerId, { username: 'carol', email: 'carol@example.test', firstName: 'C', lastName: 'D', password: 'violet-otter-harbour-42', customAttributes: {} }, SYSTEM);
    const res = await otherSite.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'carol', password: 'violet-otter-harbour-42' } });
    const carolToken = res.json().jwt_token as string;
    assert.equal((await otherSite.inject({ url: POSTS_PATH, headers: bearer(carolToken) })).statusCode, 200);
    const here = await getPosts(s, carolToken);
    assert.equal(here.statusCode, 400, 'carol\'s id is nobody (or somebody else at another version) on this site');
    assert.equal(here.json().error, 'INVALID_TOKEN');
  });

  test('a custom header name carries the JWT; Authorization is then not read for JWTs', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_JWT_HEADER: 'X-Site-Token', LATCHKEY_SITE_METHODS: 'jwt' } });
    await s.addUser('alice');
    const token = await s.token('alice');
    assert.equal((await s.get(POSTS_PATH, { 'x-site-token': token })).statusCode, 200);
    assert.equal((await s.get(POSTS_PATH, { 'x-site-token': `Bearer ${token}` })).statusCode, 200);
    assertJson(await s.get(POSTS_PATH, bearer(token)), 401, siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'X-Site-Token header is missing.'));
  });

  test('HS256 publishes no key: the JWKS document is empty and open', async (t) => {
    const s = await buildSite(t, kind);
    const res = await s.get('/.well-known/jwks.json');
    assertJson(res, 200, { keys: [] });
  });
});

describeEachStore('site JWT method, RS256', (kind) => {
  test('tokens are RS256 with a kid; the JWKS document verifies them; the key survives a restart', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_JWT_ALG: 'RS256' } });
    const alice = await s.addUser('alice');
    const token = await s.token('alice');
    const jwks = await s.get('/.well-known/jwks.json');
    assert.equal(jwks.statusCode, 200);
    assert.equal(jwks.headers['cache-control'], 'public, max-age=300');
    const { keys } = jwks.json();
    assert.equal(keys.length, 1);
    assert.deepEqual(Object.keys(keys[0]).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
    assert.deepEqual({ kty: keys[0].kty, alg: keys[0].alg, use: keys[0].use }, { kty: 'RSA', alg: 'RS256', use: 'sig' });
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'RS256', typ: 'JWT', kid: keys[0].kid });
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.json()), { issuer: SITE, audience: AUDIENCE, currentDate: new Date(s.clock.now()) });
    assert.equal(payload.sub, String(alice.id));
    assert.equal((await getPosts(s, token)).statusCode, 200);

    const again = await s.composition.buildSiteApp({ customerKey: s.customer.customerKey });
    t.after(() => again.close());
    assert.equal((await again.inject({ url: POSTS_PATH, headers: bearer(token) })).statusCode, 200, 'same key from the data dir');
  });

  test('HS256 signed with the RSA public key, and RS256 with another key: INVALID_SIGNATURE', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_JWT_ALG: 'RS256' } });
    const alice = await s.addUser('alice');
    const jwk = (await s.get('/.well-known/jwks.json')).json().keys[0];
    const rsKeys = await loadSiteJwtKeys({ alg: 'RS256', masterKey: s.composition.masterKey, dataDir: s.composition.config.dataDir });
    assert.equal(rsKeys.kid, jwk.kid);
    const publicPem = rsKeys.verificationKey.export({ type: 'spki', format: 'pem' }) as string;

    const claims = claimsFor(s, alice.id);
    const signingInput = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    const confused = `${signingInput}.${createHmac('sha256', publicPem).update(signingInput).digest('base64url')}`;
    assertJson(await getPosts(s, confused), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.'));

    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: jwk.kid }).sign(privateKey);
    assertJson(await getPosts(s, foreign), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT signature is invalid.'));

    const unknownKid = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'not-published' }).sign(rsKeys.signingKey);
    assertJson(await getPosts(s, unknownKid), 401, siteError(401, 'INVALID_SIGNATURE', 'JWT key id is not in the key set.'));

    const genuine = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(rsKeys.signingKey);
    assert.equal((await getPosts(s, genuine)).statusCode, 200, 'the same claims signed with the site key pass');
  });

  test('a configured key file is used instead of the data dir', async (t) => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'latchkey-rs-')), 'site.pem');
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_JWT_ALG: 'RS256', LATCHKEY_SITE_JWT_PRIVATE_KEY_FILE: file } });
    await s.addUser('alice');
    const token = await s.token('alice');
    const publicJwk = (await import('node:crypto')).createPublicKey(privateKey).export({ format: 'jwk' });
    const { keys } = (await s.get('/.well-known/jwks.json')).json();
    assert.equal(keys[0].n, publicJwk.n);
    assert.equal((await getPosts(s, token)).statusCode, 200);
  });
});
