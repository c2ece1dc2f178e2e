/**
 * The API-key method end to end: the default key reads only, user keys act as their user with the
 * user's capabilities, keys are stored as hashes and revocable, disabled users' keys stop at once,
 * the header is configurable; the HTTP self-service routes and the CLI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { generateSecret, sha256Hex } from '../../src/lib/tokens.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, bearer, buildSite, PASSWORD, POSTS_PATH, siteError, type SiteTest } from './helpers.ts';
import { fileTestEnv } from '../helpers/app.ts';

if (postgresUrl) await postgresStore();

const KEYS_PATH = '/cms-json/api/v1/api-keys';
const INVALID_KEY = siteError(401, 'INVALID_API_KEY', 'API key is invalid or expired.');
const READ_ONLY = siteError(403, 'FORBIDDEN', 'The site API key is read-only: only GET and HEAD requests are allowed.');
const NOT_EDITOR = siteError(403, 'FORBIDDEN', 'These credentials may not change posts.');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const KEY_SHAPE = /^lksk_[0-9A-Za-z]{49,}$/;

const post = (s: SiteTest, key: string, body: unknown = { title: 'From a key' }) =>
  s.inject({ method: 'POST', url: POSTS_PATH, headers: bearer(key), payload: body as Record<string, unknown> });

describeEachStore('site API keys', (kind) => {
  test('the default key reads posts; every write gets 403; drafts need an editor', async (t) => {
    const s = await buildSite(t, kind);
    const key = await s.defaultKey();
    assert.match(key, KEY_SHAPE);
    const list = await s.get(POSTS_PATH, bearer(key));
    assert.equal(list.statusCode, 200);
    const first = list.json()[0];
    assert.equal((await s.get(`${POSTS_PATH}/${first.id}`, bearer(key))).statusCode, 200);
    assert.equal((await s.inject({ method: 'HEAD', url: POSTS_PATH, headers: bearer(key) })).statusCode, 200);
    assertJson(await post(s, key), 403, READ_ONLY);
    for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
      assertJson(await s.inject({ method, url: `${POSTS_PATH}/${first.id}`, headers: bearer(key), payload: { title: 'x' } }), 403, READ_ONLY);
    }
    assertJson(await s.get(`${POSTS_PATH}?status=draft`, bearer(key)), 403, NOT_EDITOR);
    assertJson(await s.get(KEYS_PATH, bearer(key)), 403, siteError(403, 'FORBIDDEN', 'API keys are managed by a user, not with the site API key.'));
  });

  test("a user key acts as its user: an editor's key writes, a reader's key reads only", async (t) => {
    const s = await buildSite(t, kind);
    const editor = await s.addUser('erin', { groups: ['editors'] });
    await s.addUser('rick');
    const editorKey = await s.userKey('erin');
    const readerKey = await s.userKey('rick');
    const created = await post(s, editorKey, { title: 'Written with a key' });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().author, editor.id);
    assert.equal((await s.get(POSTS_PATH, bearer(readerKey))).statusCode, 200);
    assertJson(await post(s, readerKey), 403, NOT_EDITOR);
  });

  test('unknown, mistyped, revoked and expired keys: 401 INVALID_API_KEY', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const { composition: { services } } = s;
    const unknown = generateSecret('lksk');
    const key = await s.userKey('alice');
    const typo = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    for (const bad of [unknown, typo, 'lksk_short', 'plain-garbage', 'lksk_' + 'x'.repeat(300)]) {
      const res = await s.get(POSTS_PATH, bearer(bad));
      assertJson(res, 401, INVALID_KEY);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="site"');
    }
    assert.equal((await s.get(POSTS_PATH, bearer(key))).statusCode, 200);
    const [listed] = await services.siteApiKeys.list(s.customerId);
    await services.siteApiKeys.revoke(s.customerId, listed.id, SYSTEM);
    assertJson(await s.get(POSTS_PATH, bearer(key)), 401, INVALID_KEY);

    const expiring = await services.siteApiKeys.create(s.customerId, { login: 'alice', expiresAt: s.clock.now() + 60_000 }, SYSTEM);
    assert.equal((await s.get(POSTS_PATH, bearer(expiring.apiKey))).statusCode, 200);
    s.clock.advance(60_000);
    assertJson(await s.get(POSTS_PATH, bearer(expiring.apiKey)), 401, INVALID_KEY);
  });

  test('keys are stored only as SHA-256; the secret is nowhere in the table', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const key = await s.userKey('alice');
    const rows = await s.composition.store.db.selectFrom('site_api_keys').selectAll().where('customer_id', '=', s.customerId).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].key_hash, sha256Hex(key));
    assert.ok(!JSON.stringify(rows).includes(key.slice(5, 30)));
  });

  test("disabling the user stops the user's keys at once; enabling restores them; deleting removes them", async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const key = await s.userKey('alice');
    const ck = Number(s.customer.customerKey);
    assert.equal((await s.admin.post('/admin/users/disable', { customerKey: ck, username: 'alice' })).statusCode, 200);
    assertJson(await s.get(POSTS_PATH, bearer(key)), 401, INVALID_KEY);
    assert.equal((await s.admin.post('/admin/users/enable', { customerKey: ck, username: 'alice' })).statusCode, 200);
    assert.equal((await s.get(POSTS_PATH, bearer(key))).statusCode, 200);
    assert.equal((await s.admin.post('/admin/users/delete', { customerKey: ck, username: 'alice' })).statusCode, 200);
    assertJson(await s.get(POSTS_PATH, bearer(key)), 401, INVALID_KEY);
  });

  test("one live default key per customer; another customer's keys do not open this site", async (t) => {
    const s = await buildSite(t, kind);
    const { siteApiKeys } = s.composition.services;
    const first = await siteApiKeys.create(s.customerId, { name: 'public reader' }, SYSTEM);
    await assert.rejects(siteApiKeys.create(s.customerId, {}, SYSTEM), { name: 'Conflict', message: 'The site already has a default API key: revoke it first.' });
    await siteApiKeys.revoke(s.customerId, first.id, SYSTEM);
    const second = await siteApiKeys.create(s.customerId, { expiresAt: s.clock.now() + 1000 }, SYSTEM);
    s.clock.advance(1000);
    const third = await siteApiKeys.create(s.customerId, {}, SYSTEM);
    assert.equal((await siteApiKeys.get(s.customerId, second.id)).revokedAt, s.clock.now(), 'an expired default key is retired by the next one');
    assert.equal((await s.get(POSTS_PATH, bearer(third.apiKey))).statusCode, 200);

    const other = await s.newCustomer();
    const foreign = await siteApiKeys.create(other.customer.customerId, {}, SYSTEM);
    assertJson(await s.get(POSTS_PATH, bearer(foreign.apiKey)), 401, INVALID_KEY);
    await assert.rejects(siteApiKeys.get(s.customerId, foreign.id), { name: 'NotFound' });
  });

  test('concurrent default-key creation leaves exactly one live key', async (t) => {
    const s = await buildSite(t, kind);
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => s.composition.services.siteApiKeys.create(s.customerId, {}, SYSTEM)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    const live = (await s.composition.services.siteApiKeys.list(s.customerId, { userId: null })).filter((k) => k.revokedAt === null);
    assert.equal(live.length, 1);
  });

  test('a custom API-key header; a wrong scheme there is 401', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_APIKEY_HEADER: 'X-Api-Key' } });
    await s.addUser('alice');
    const key = await s.userKey('alice');
    assert.equal((await s.get(POSTS_PATH, { 'x-api-key': key })).statusCode, 200);
    assert.equal((await s.get(POSTS_PATH, { 'x-api-key': `Bearer ${key}` })).statusCode, 200);
    assertJson(await s.get(POSTS_PATH, { 'x-api-key': `Token ${key}` }), 401,
      siteError(401, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'X-Api-Key header token type must be Bearer.'));
    assertJson(await s.get(POSTS_PATH, { 'x-api-key': 'lksk_nope' }), 401, INVALID_KEY);
    assert.equal((await s.get(POSTS_PATH, bearer(await s.token('alice')))).statusCode, 200, 'JWTs stay on Authorization');
  });

  test('with only API keys on, a wrong scheme on Authorization is 401 and a dotted value is a key', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_METHODS: 'apikey' } });
    await s.addUser('alice');
    const key = await s.userKey('alice');
    assertJson(await s.get(POSTS_PATH, { authorization: `Basic ${key}` }), 401,
      siteError(401, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'Authorization header token type must be Bearer.'));
    assertJson(await s.get(POSTS_PATH, bearer('a.b.c')), 401, INVALID_KEY);
    assertJson(await s.get(POSTS_PATH), 401, siteError(401, 'MISSING_AUTHORIZATION_HEADER', 'Authorization header is missing.'));
  });
});

describeEachStore('site API keys over HTTP', (kind) => {
  test('a user creates (shown once, no-store), lists and revokes their own keys', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const jwt = await s.token('alice');
    const created = await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(jwt), payload: { name: 'ci', expiresInDays: 30 } });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.headers['cache-control'], 'no-store');
    const body = created.json();
    assert.match(body.apiKey, KEY_SHAPE);
    assert.match(body.createdAt, ISO);
    assert.equal(Date.parse(body.expiresAt) - Date.parse(body.createdAt), 30 * 86_400_000);
    assert.deepEqual(body, { id: body.id, user: 'alice', name: 'ci', createdAt: body.createdAt, expiresAt: body.expiresAt, revoked: false, apiKey: body.apiKey });
    assert.equal((await s.get(POSTS_PATH, bearer(body.apiKey))).statusCode, 200);

    const bare = await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(jwt) });
    assert.equal(bare.statusCode, 201, 'no body: a key for me');

    const listed = await s.get(KEYS_PATH, bearer(body.apiKey));
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(listed.json().map((k: { id: number; user: string; revoked: boolean }) => [k.id, k.user, k.revoked]), [[body.id, 'alice', false], [bare.json().id, 'alice', false]]);
    assert.ok(!listed.body.includes(body.apiKey.slice(5)), 'listing never shows a secret');

    const revoked = await s.inject({ method: 'DELETE', url: `${KEYS_PATH}/${body.id}`, headers: bearer(jwt) });
    assertJson(revoked, 200, { id: body.id, user: 'alice', name: 'ci', createdAt: body.createdAt, expiresAt: body.expiresAt, revoked: true });
    assertJson(await s.get(POSTS_PATH, bearer(body.apiKey)), 401, INVALID_KEY);
  });

  test('creating a key with a null or non-object JSON body is 400 and creates nothing (issue 13 item 10)', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const jwt = await s.token('alice');
    const json = { ...bearer(jwt), 'content-type': 'application/json' };
    for (const payload of ['null', '""', '"x"', '0', '5', 'true', 'false', '[]', '[{}]']) {
      const res = await s.inject({ method: 'POST', url: KEYS_PATH, headers: json, payload });
      assertJson(res, 400, siteError(400, 'BAD_REQUEST', 'body must be object'));
    }
    const text = await s.inject({ method: 'POST', url: KEYS_PATH, headers: { ...bearer(jwt), 'content-type': 'text/plain' }, payload: 'name' });
    assertJson(text, 400, siteError(400, 'BAD_REQUEST', 'body must be object'));
    assertJson(await s.get(KEYS_PATH, bearer(jwt)), 200, []);
  });

  test("a non-administrator cannot touch other users' keys or the default key; a site admin can", async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    await s.addUser('bob');
    await s.addUser('ada', { groups: ['site-admins'] });
    const alice = await s.token('alice');
    const ada = await s.token('ada');
    const bobKey = (await s.composition.services.siteApiKeys.create(s.customerId, { login: 'bob' }, SYSTEM)).id;
    const notAdmin = siteError(403, 'FORBIDDEN', "Only site administrators manage other users' and the default API keys.");
    assertJson(await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(alice), payload: { user: 'bob' } }), 403, notAdmin);
    assertJson(await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(alice), payload: { default: true } }), 403, notAdmin);
    assertJson(await s.inject({ method: 'DELETE', url: `${KEYS_PATH}/${bobKey}`, headers: bearer(alice) }), 404, siteError(404, 'NOT_FOUND', 'API key not found.'));
    assertJson(await s.inject({ method: 'DELETE', url: `${KEYS_PATH}/abc`, headers: bearer(alice) }), 404, siteError(404, 'NOT_FOUND', 'API key not found.'));
    assert.deepEqual((await s.get(KEYS_PATH, bearer(alice))).json(), []);

    const forBob = await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(ada), payload: { user: 'bob' } });
    assert.equal(forBob.statusCode, 201);
    assert.equal(forBob.json().user, 'bob');
    const dflt = await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(ada), payload: { default: true, name: 'public' } });
    assert.equal(dflt.statusCode, 201);
    assert.equal(dflt.json().user, null);
    assertJson(await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(ada), payload: { default: true } }), 409,
      siteError(409, 'CONFLICT', 'The site already has a default API key: revoke it first.'));
    assertJson(await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(ada), payload: { user: 'nobody' } }), 404,
      siteError(404, 'NOT_FOUND', 'Invalid username or email.'));
    assert.equal((await s.get(KEYS_PATH, bearer(ada))).json().length, 3);
    assert.equal((await s.inject({ method: 'DELETE', url: `${KEYS_PATH}/${bobKey}`, headers: bearer(ada) })).json().revoked, true);
    assertJson(await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(ada), payload: { expiresInDays: 0 } }), 400,
      siteError(400, 'BAD_REQUEST', 'expiresInDays must be >= 1'));
  });
});

const run = promisify(execFile);

test('CLI: site api-key create / list / revoke --json, and the key works on the site', async (t) => {
  const env = fileTestEnv();
  const app = await compose(loadConfig(env));
  t.after(() => app.close());
  const customer = await app.services.customers.create({ email: 'owner@example.test' });
  await app.services.users.create(customer.customerId, { username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', password: PASSWORD, customAttributes: {} }, SYSTEM);
  const cli = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, ['bin/latchkey.js', ...args, '--json'], { env, cwd: process.cwd() });
    return JSON.parse(stdout);
  };

  const userKey = await cli('site', 'api-key', 'create', '--user', 'alice');
  assert.match(userKey.apiKey, KEY_SHAPE);
  assert.deepEqual(userKey, { id: userKey.id, apiKey: userKey.apiKey });
  const siteKey = await cli('site', 'api-key', 'create', '--name', 'public');
  const listed = await cli('site', 'api-key', 'list');
  assert.deepEqual(listed.map((k: Record<string, unknown>) => ({ ...k, createdAt: typeof k.createdAt })), [
    { id: userKey.id, user: 'alice', name: '', createdAt: 'string', expiresAt: null, revoked: false },
    { id: siteKey.id, user: null, name: 'public', createdAt: 'string', expiresAt: null, revoked: false },
  ]);

  const site = await app.buildSiteApp();
  t.after(() => site.close());
  assert.equal((await site.inject({ url: POSTS_PATH, headers: bearer(userKey.apiKey) })).statusCode, 200);
  const revoked = await cli('site', 'api-key', 'revoke', '--id', String(userKey.id));
  assert.equal(revoked.revoked, true);
  assert.equal((await site.inject({ url: POSTS_PATH, headers: bearer(userKey.apiKey) })).statusCode, 401);

  await assert.rejects(run(process.execPath, ['bin/latchkey.js', 'site', 'api-key', 'create', '--user', 'nobody', '--json'], { env }),
    (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.deepEqual(JSON.parse(error.stderr), { error: 'not_found', message: 'Invalid username or email.' });
      return true;
    });
});
