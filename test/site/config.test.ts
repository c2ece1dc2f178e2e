/**
 * Site configuration: the environment, the settings made with `latchkey site config set` (stored for
 * every node, applied at start), `site config --json` (never secrets), and binding the site to its
 * customer (clear errors when there is none, several, or the configured key names no one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { compose } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import { fileTestEnv, testEnv } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, bearer, buildSite, POSTS_PATH, siteError, TOKEN_PATH } from './helpers.ts';

if (postgresUrl) await postgresStore();

const run = promisify(execFile);

describeEachStore('site settings from the CLI', (kind) => {
  test('settings override the environment when the site starts; reset returns to it', async (t) => {
    const s = await buildSite(t, kind);
    const { siteSettings } = s.composition.services;
    await siteSettings.set({ methods: ['apikey'], jwtTtlSeconds: 120, apiKeyHeader: 'X-Key', editorGroup: 'writers', editorRoles: ['chief'], adminGroup: 'owners' });
    const { config, fromCli } = await siteSettings.effective(s.composition.config.site);
    assert.deepEqual(fromCli, ['methods', 'jwtTtlSeconds', 'apiKeyHeader', 'editorGroup', 'editorRoles', 'adminGroup']);
    assert.deepEqual(
      { methods: config.methods, ttl: config.jwtTtlSeconds, header: config.apiKeyHeader, group: config.editorGroup, roles: config.editorRoles, admin: config.adminGroup },
      { methods: ['apikey'], ttl: 120, header: 'x-key', group: 'writers', roles: ['CHIEF'], admin: 'owners' },
    );

    const restarted = await s.composition.buildSiteApp({ customerKey: s.customer.customerKey });
    t.after(() => restarted.close());
    await s.addUser('alice');
    const key = await s.userKey('alice');
    assert.equal((await restarted.inject({ url: POSTS_PATH, headers: { 'x-key': key } })).statusCode, 200);
    assertJson(await restarted.inject({ url: POSTS_PATH, headers: bearer(key) }), 401,
      siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'X-Key header is missing.'));

    await siteSettings.reset();
    assert.deepEqual((await siteSettings.effective(s.composition.config.site)).fromCli, []);
  });

  test('bad settings are refused and nothing is written', async (t) => {
    const s = await buildSite(t, kind);
    const { siteSettings } = s.composition.services;
    await assert.rejects(siteSettings.set({ jwtTtlSeconds: 120, methods: ['jwt', 'saml' as never] }), { name: 'Invalid', message: 'methods has an unknown method "saml"' });
    await assert.rejects(siteSettings.set({ methods: [] }), { name: 'Invalid' });
    await assert.rejects(siteSettings.set({ jwtHeader: 'bad header' }), { name: 'Invalid', message: 'jwtHeader must be a header name' });
    await assert.rejects(siteSettings.set({ jwtTtlSeconds: 5 }), { name: 'Invalid', message: 'jwtTtlSeconds must be an integer between 60 and 2592000' });
    assert.deepEqual((await siteSettings.effective(s.composition.config.site)).fromCli, []);
  });

  test('a token issued under the CLI lifetime', async (t) => {
    const s = await buildSite(t, kind);
    await s.composition.services.siteSettings.set({ jwtTtlSeconds: 600 });
    const site = await s.composition.buildSiteApp({ customerKey: s.customer.customerKey });
    t.after(() => site.close());
    // Settings are shared by the PostgreSQL suite's tests: put them back first.
    await s.composition.services.siteSettings.reset();
    await s.addUser('alice');
    const res = await site.inject({ method: 'POST', url: TOKEN_PATH, payload: { username: 'alice', password: 'violet-otter-harbour-42' } });
    assert.equal(res.json().expires_in - res.json().iat, 600);
  });
});

test('binding: no customer, several customers, or an unknown key each stop the site with a clear message', async (t) => {
  const empty = await compose(loadConfig(testEnv()));
  t.after(() => empty.close());
  await assert.rejects(empty.buildSiteApp(), { message: 'the content site needs a customer: create one with `latchkey customer create --email E`' });
  const first = await empty.services.customers.create({ email: 'one@example.test' });
  const site = await empty.buildSiteApp();
  t.after(() => site.close());
  assert.equal(site.hasRoute({ method: 'GET', url: POSTS_PATH }), true, 'the only customer is bound');
  await empty.services.customers.create({ email: 'two@example.test' });
  await assert.rejects(empty.buildSiteApp(), { message: 'several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves' });
  await assert.rejects(empty.buildSiteApp({ customerKey: '999999999' }), { message: 'LATCHKEY_SITE_CUSTOMER_KEY=999999999 names no customer: create it or fix the key' });
  const bound = await empty.buildSiteApp({ customerKey: first.customerKey });
  await bound.close();
});

test('CLI: site config --json shows the effective settings and never a secret; set and reset', async (t) => {
  const env = fileTestEnv({
    LATCHKEY_SITE_PROVIDER_ISSUER: 'https://id.example.test',
    LATCHKEY_SITE_PROVIDER_CLIENT_ID: 'site-client',
    LATCHKEY_SITE_PROVIDER_CLIENT_SECRET: 'never-show-this-secret',
  });
  const app = await compose(loadConfig(env));
  t.after(() => app.close());
  const customer = await app.services.customers.create({ email: 'owner@example.test' });
  const cli = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, ['bin/latchkey.js', ...args, '--json'], { env });
    assert.ok(!stdout.includes('never-show-this-secret'));
    return JSON.parse(stdout);
  };

  const shown = await cli('site', 'config');
  assert.deepEqual(shown, {
    siteUrl: 'http://127.0.0.1:8081',
    customer: { customerId: customer.customerId, customerKey: Number(customer.customerKey) },
    methods: ['jwt', 'provider', 'apikey', 'apitoken'],
    jwt: {
      alg: 'HS256', ttlSeconds: 3600, header: 'authorization', issuer: 'http://127.0.0.1:8081',
      audience: 'http://127.0.0.1:8081/cms-json', privateKeyFile: null, jwksUrl: 'http://127.0.0.1:8081/.well-known/jwks.json',
    },
    apiKeyHeader: 'authorization',
    editorRoles: ['EDITOR', 'ADMIN'],
    editorGroup: 'editors',
    adminGroup: 'site-admins',
    provider: {
      configured: true, issuer: 'https://id.example.test', introspectionUrl: null, userinfoUrl: null,
      clientId: 'site-client', clientSecretSet: true, userClaim: 'email', timeoutMs: 3000, cacheSeconds: 60,
    },
    login: { userFreeAttempts: 5, ipFreeAttempts: 50, maxDelaySeconds: 300 },
    postsCacheMs: 1000,
    fromCli: [],
  });

  assert.deepEqual(await cli('site', 'config', 'set', '--methods', 'jwt,apikey', '--jwt-ttl-seconds', '900'), { updated: ['methods', 'jwtTtlSeconds'] });
  const after = await cli('site', 'config');
  assert.deepEqual([after.methods, after.jwt.ttlSeconds, after.fromCli], [['jwt', 'apikey'], 900, ['methods', 'jwtTtlSeconds']]);

  await assert.rejects(run(process.execPath, ['bin/latchkey.js', 'site', 'config', 'set', '--methods', 'jwt,saml', '--json'], { env }),
    (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.deepEqual(JSON.parse(error.stderr), { error: 'invalid', message: 'methods has an unknown method "saml"' });
      return true;
    });
  assert.deepEqual(await cli('site', 'config', 'reset'), { reset: true });
  assert.deepEqual((await cli('site', 'config')).fromCli, []);
});
