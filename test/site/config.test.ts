/**
 * Site configuration: the environment, the settings made with `latchkey site config set` (stored for
 * every node, applied at start), `site config --json` (never secrets), and binding the site to its
 * customer (clear errors when there is none, several, or the configured key names no one).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { SYSTEM } from '../../src/audit/context.ts';
import { siteNotReady } from '../../src/site/app.ts';
import { createStore, type Store } from '../../src/store/db.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { compose } from '../../src/compose/index.ts';
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

/** A composition on a store of its own: a new in-memory SQLite database, or a new PostgreSQL schema. */
async function freshComposition(t: TestContext, kind: 'sqlite' | 'postgres', logs?: string[]) {
  let store: Store;
  if (kind === 'sqlite') {
    store = await createStore(':memory:');
  } else {
    const schema = `lk_bind_${process.pid}_${randomBytes(3).toString('hex')}`;
    store = await createStore(postgresUrl!, { schema, poolSize: 2 });
    t.after(async () => {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    });
  }
  const logStream = logs ? { write: (line: string) => { logs.push(line); } } : undefined;
  const app = await compose(loadConfig(testEnv({ LATCHKEY_LOG_LEVEL: 'info' })), { store, logStream });
  t.after(async () => { await app.close(); await store.close(); });
  return app;
}

const NEEDS_A_CUSTOMER = 'the content site needs a customer: create one with `latchkey customer create --email E`';
const SEVERAL = 'several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves';

/** The site answers every route with 503 and `reason` in the site shape, and says it is not ready. */
async function assertUnavailable(site: FastifyInstance, reason: string) {
  assert.equal(siteNotReady(site), reason);
  const body = { status: 'error', error: 'SERVICE_UNAVAILABLE', code: '503', error_description: reason };
  for (const [method, url] of [['GET', POSTS_PATH], ['POST', TOKEN_PATH], ['GET', '/rest/api/2/myself'], ['GET', '/no/such/route']] as const) {
    const response = await site.inject({ method, url });
    assert.equal(response.statusCode, 503, url);
    assert.deepEqual(response.json(), body, url);
  }
  assert.deepEqual((await site.inject({ url: '/readyz' })).json(), { status: 'unavailable' });
  assert.equal((await site.inject({ url: '/readyz' })).statusCode, 503);
  assert.equal((await site.inject({ url: '/healthz' })).statusCode, 200);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  const skip = kind === 'postgres' && !postgresUrl ? 'LATCHKEY_TEST_POSTGRES_URL is not set' : false;

  test(`binding [${kind}]: the site records the only customer and keeps serving it when a second one is created`, { skip }, async (t) => {
    const app = await freshComposition(t, kind);
    const first = await app.services.customers.create({ email: 'one@example.test' });
    const site = await app.buildSiteApp();
    t.after(() => site.close());
    assert.equal(siteNotReady(site), undefined);
    const key = (await app.services.siteApiKeys.create(first.customerId, {}, SYSTEM)).apiKey;
    assert.equal((await site.inject({ url: POSTS_PATH, headers: bearer(key) })).statusCode, 200);

    await app.services.customers.create({ email: 'two@example.test' });
    // A restart, and a `site config reset` in between: the binding is not a CLI setting.
    await app.services.siteSettings.reset();
    const restarted = await app.buildSiteApp();
    t.after(() => restarted.close());
    assert.equal(siteNotReady(restarted), undefined, 'still bound');
    assert.equal((await restarted.inject({ url: POSTS_PATH, headers: bearer(key) })).statusCode, 200, 'the first customer\'s key works');
    assert.equal(await app.services.siteSettings.boundCustomerKey(), first.customerKey);

    // LATCHKEY_SITE_CUSTOMER_KEY still wins over the recorded binding.
    const second = (await app.services.customers.list()).find((c) => c.customerKey !== first.customerKey)!;
    const configured = await app.buildSiteApp({ customerKey: second.customerKey });
    t.after(() => configured.close());
    assertJson(await configured.inject({ url: POSTS_PATH, headers: bearer(key) }), 401, siteError(401, 'INVALID_API_KEY', 'API key is invalid or expired.'));
  });

  test(`binding [${kind}]: no customer, several with none recorded, or an unknown key: the site answers 503 with the reason and logs it once`, { skip }, async (t) => {
    const logs: string[] = [];
    const app = await freshComposition(t, kind, logs);
    const empty = await app.buildSiteApp();
    t.after(() => empty.close());
    await assertUnavailable(empty, NEEDS_A_CUSTOMER);

    await app.services.customers.create({ email: 'one@example.test' });
    await app.services.customers.create({ email: 'two@example.test' });
    logs.length = 0;
    const ambiguous = await app.buildSiteApp();
    t.after(() => ambiguous.close());
    await assertUnavailable(ambiguous, SEVERAL);
    const logged = logs.map((line) => JSON.parse(line) as { level: number; msg: string; reason?: string }).filter((r) => r.reason !== undefined);
    assert.deepEqual(logged.map((r) => [r.level, r.msg, r.reason]), [[50, `content site not serving: ${SEVERAL}`, SEVERAL]]);
    assert.equal(await app.services.siteSettings.boundCustomerKey(), undefined, 'nothing is recorded when ambiguous');

    const unknown = await app.buildSiteApp({ customerKey: '999999999' });
    t.after(() => unknown.close());
    await assertUnavailable(unknown, 'LATCHKEY_SITE_CUSTOMER_KEY=999999999 names no customer: create it or fix the key');

    const management = await app.buildManagementApp({ siteNotReady: () => siteNotReady(ambiguous) });
    t.after(() => management.close());
    const ready = await management.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.deepEqual(ready.json(), { status: 'unavailable', checks: { database: 'ok', site: SEVERAL } });
  });
}

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
