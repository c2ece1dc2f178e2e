/**
 * Third-party provider tokens end to end: a real OpenID provider (oidc-provider) issues access and ID
 * tokens through the authorization-code flow; the site checks them (introspection, user-info, local
 * JWKS), maps the e-mail claim to a site user, and fails closed when the provider cannot answer.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { closeServer, listen, SITE_CLIENT, startProvider, type TestProvider } from '../helpers/oidc-provider.ts';
import { assertJson, buildSite, POSTS_PATH, siteError, type SiteTest } from './helpers.ts';

if (postgresUrl) await postgresStore();

let op: TestProvider & { close(): Promise<void> };
before(async () => { op = await startProvider(); });
after(() => op.close());

const invalidToken = (description: string) => siteError(400, 'INVALID_TOKEN', description);

function providerEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    LATCHKEY_SITE_PROVIDER_ISSUER: op.issuer,
    LATCHKEY_SITE_PROVIDER_CLIENT_ID: SITE_CLIENT.id,
    LATCHKEY_SITE_PROVIDER_CLIENT_SECRET: SITE_CLIENT.secret,
    ...extra,
  };
}

/** A site user whose e-mail is the provider account's. */
async function siteUser(s: SiteTest, username: string, email: string, groups?: string[]): Promise<void> {
  if (groups) await s.composition.services.groups.upsert(s.customerId, groups.map((name) => ({ name, isDefault: false, attributes: {} })), SYSTEM);
  await s.composition.services.users.create(s.customerId, {
    username, email, firstName: 'P', lastName: 'U', customAttributes: {},
    ...(groups ? { groups: groups.map((name) => ({ name, attributes: [] })) } : {}),
  }, SYSTEM);
}

describeEachStore('site third-party provider tokens', (kind) => {
  test('an access_token (introspection) and an id_token (provider JWKS) open the posts as the mapped user', async (t) => {
    const s = await buildSite(t, kind, { env: providerEnv() });
    await siteUser(s, 'alice', 'alice@example.test', ['editors']);
    const tokens = await op.signIn('alice');
    assert.equal((await s.get(POSTS_PATH, { access_token: tokens.access_token })).statusCode, 200);
    assert.equal((await s.get(POSTS_PATH, { access_token: `Bearer ${tokens.access_token}` })).statusCode, 200);
    assert.equal((await s.get(POSTS_PATH, { id_token: tokens.id_token })).statusCode, 200);
    const created = await s.inject({ method: 'POST', url: POSTS_PATH, headers: { access_token: tokens.access_token }, payload: { title: 'Via the provider' } });
    assert.equal(created.statusCode, 201, 'the mapped user is an editor');
    const user = await s.composition.services.users.findByLogin(s.customerId, 'alice');
    assert.equal(created.json().author, user!.id);
  });

  test('an e-mail known only to user-info, in another case, still maps to the site user', async (t) => {
    const s = await buildSite(t, kind, { env: providerEnv() });
    await siteUser(s, 'bob', 'bob@example.test');
    const tokens = await op.signIn('bob');
    assert.equal((await s.get(POSTS_PATH, { access_token: tokens.access_token })).statusCode, 200);
    const write = await s.inject({ method: 'POST', url: POSTS_PATH, headers: { access_token: tokens.access_token }, payload: { title: 'x' } });
    assertJson(write, 403, siteError(403, 'FORBIDDEN', 'These credentials may not change posts.'));
  });

  test('no site user for the claim, a disabled one, or an unverified e-mail: 400 INVALID_TOKEN', async (t) => {
    const s = await buildSite(t, kind, { env: providerEnv() });
    await siteUser(s, 'mallory', 'mallory@example.test');
    await siteUser(s, 'alice', 'alice@example.test');
    const bob = await op.signIn('bob');
    assertJson(await s.get(POSTS_PATH, { access_token: bob.access_token }), 400, invalidToken('No active site user matches the token.'));
    const mallory = await op.signIn('mallory');
    assertJson(await s.get(POSTS_PATH, { access_token: mallory.access_token }), 400, invalidToken('token e-mail address is not verified'));
    const alice = await op.signIn('alice');
    assert.equal((await s.get(POSTS_PATH, { id_token: alice.id_token })).statusCode, 200);
    assert.equal((await s.admin.post('/admin/users/disable', { customerKey: Number(s.customer.customerKey), username: 'alice' })).statusCode, 200);
    assertJson(await s.get(POSTS_PATH, { id_token: alice.id_token }), 400, invalidToken('No active site user matches the token.'));
  });

  test('revoked, forged and garbage tokens: 400 INVALID_TOKEN; a wrong scheme: 400', async (t) => {
    const s = await buildSite(t, kind, { env: providerEnv() });
    await siteUser(s, 'alice', 'alice@example.test');
    const tokens = await op.signIn('alice');
    await op.revoke(tokens.access_token);
    assertJson(await s.get(POSTS_PATH, { access_token: tokens.access_token }), 400, invalidToken('token is not active'));
    const [h, p] = tokens.id_token.split('.');
    assertJson(await s.get(POSTS_PATH, { id_token: `${h}.${p}.AAAA` }), 400, invalidToken('token signature is not valid'));
    assertJson(await s.get(POSTS_PATH, { access_token: 'not-a-token' }), 400, invalidToken('token is not active'));
    assertJson(await s.get(POSTS_PATH, { access_token: 'ünïcode' }), 400, invalidToken('token has characters no token has'));
    assertJson(await s.get(POSTS_PATH, { access_token: `Basic ${tokens.id_token}` }), 400,
      siteError(400, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'access_token header token type must be Bearer.'));
  });

  test('a provider that is down or answers garbage fails closed', async (t) => {
    const down = createServer();
    const downUrl = await listen(down);
    await closeServer(down);
    const s = await buildSite(t, kind, { env: providerEnv({ LATCHKEY_SITE_PROVIDER_ISSUER: downUrl }) });
    await siteUser(s, 'alice', 'alice@example.test');
    const tokens = await op.signIn('alice');
    assertJson(await s.get(POSTS_PATH, { access_token: tokens.access_token }), 400, invalidToken('provider discovery could not be reached'));

    const garbage = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{not json'));
    const garbageUrl = await listen(garbage);
    t.after(() => closeServer(garbage));
    const g = await buildSite(t, kind, { env: providerEnv({ LATCHKEY_SITE_PROVIDER_ISSUER: garbageUrl }) });
    assertJson(await g.get(POSTS_PATH, { id_token: tokens.id_token }), 400, invalidToken('provider discovery did not answer with JSON'));
  });

  test('the user claim is configurable (sub matched against usernames)', async (t) => {
    const s = await buildSite(t, kind, { env: providerEnv({ LATCHKEY_SITE_PROVIDER_USER_CLAIM: 'sub' }) });
    await siteUser(s, 'alice', 'someone-else@example.test');
    const tokens = await op.signIn('alice');
    assert.equal((await s.get(POSTS_PATH, { id_token: tokens.id_token })).statusCode, 200);
  });

  test('with the provider method off, or no provider configured, the headers are ignored', async (t) => {
    const off = await buildSite(t, kind, { env: providerEnv({ LATCHKEY_SITE_METHODS: 'jwt,apikey' }) });
    await siteUser(off, 'alice', 'alice@example.test');
    const tokens = await op.signIn('alice');
    assertJson(await off.get(POSTS_PATH, { access_token: tokens.access_token }), 401,
      siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'Authorization header is missing.'));
    const unconfigured = await buildSite(t, kind, { env: { LATCHKEY_LOG_LEVEL: 'info' } });
    assertJson(await unconfigured.get(POSTS_PATH, { id_token: tokens.id_token }), 401,
      siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'Authorization header is missing.'));
    assert.ok(unconfigured.logs.some((line) => line.includes('the provider method is enabled but no provider is configured')));
  });
});
