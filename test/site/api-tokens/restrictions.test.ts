import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SYSTEM } from '../../../src/audit/context.ts';
import { LimitExceeded } from '../../../src/lib/errors.ts';
import { createPurgeScheduler } from '../../../src/site/api-tokens/scheduler.ts';
import { createApiTokensService } from '../../../src/site/api-tokens/service.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { basic, bearer, buildTokenSite, DAY, json, PASSWORD } from './harness.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const bad = (description: string) => ({ status: 'error', error: 'BAD_REQUEST', code: '400', error_description: description });

describeEachStore('API token restrictions', (kind) => {
  test('the maximum lifetime: longer requests are refused, no expiry means the maximum', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS: '30' });
    await site.createUser('alice');
    const auth = basic('alice', PASSWORD);
    const now = site.clock.now();
    const post = (body: Record<string, unknown>) => site.request('POST', '/rest/api/2/tokens', auth, { name: 'n', type: 'bearer', ...body });
    assert.deepEqual(json(await post({ expiresInDays: 31 }), 400),
      bad("expiresInDays must be at most 30: the administrator's maximum token lifetime is 30 days"));
    assert.deepEqual(json(await post({ expiresAt: iso(now + 30 * DAY + 1) }), 400),
      bad("expiresAt must be at most 30 days from now: the administrator's maximum token lifetime is 30 days"));
    assert.equal(json(await post({ expiresInDays: 30 }), 201).expiresAt, iso(now + 30 * DAY));
    assert.equal(json(await post({ expiresAt: iso(now + 30 * DAY) }), 201).expiresAt, iso(now + 30 * DAY));
    assert.equal(json(await post({}), 201).expiresAt, iso(now + 30 * DAY));
  });

  test('with no maximum (0), tokens may never expire', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS: '0' });
    await site.createUser('alice');
    const auth = basic('alice', PASSWORD);
    const forever = json(await site.request('POST', '/rest/api/2/tokens', auth, { name: 'forever', type: 'basic' }), 201);
    assert.equal(forever.expiresAt, null);
    assert.equal(json(await site.request('POST', '/rest/api/2/tokens', auth, { name: 'long', type: 'basic', expiresInDays: 36500 }), 201).expiresAt,
      iso(site.clock.now() + 36500 * DAY));
    site.clock.advance(3650 * DAY);
    json(await site.get('/rest/api/2/myself', basic('alice', forever.token)), 200);
  });

  test('the maximum number of live tokens per user', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_PER_USER: '2' });
    await site.createUser('alice');
    const bob = await site.createUser('bob');
    const auth = basic('alice', PASSWORD);
    const post = (body: Record<string, unknown> = {}) => site.request('POST', '/rest/api/2/tokens', auth, { name: 'n', type: 'bearer', ...body });
    const first = json(await post({ expiresInDays: 1 }), 201);
    json(await post(), 201);
    const limit = bad('a user may have at most 2 API tokens: revoke one or delete expired tokens first');
    assert.deepEqual(json(await post(), 400), limit);
    // Other users have their own allowance.
    await site.token(bob, 'basic');
    await site.token(bob, 'basic');
    // A revoked token frees its place; so does an expired one.
    assert.equal((await site.request('DELETE', `/rest/api/2/tokens/${first.id}`, auth)).statusCode, 204);
    const third = json(await post({ expiresInDays: 1 }), 201);
    assert.deepEqual(json(await post(), 400), limit);
    site.clock.advance(DAY);
    json(await post(), 201);
    assert.deepEqual(json(await post(), 400), limit);
    assert.equal(json(await site.get(`/rest/api/2/tokens/${third.id}`, auth), 200).expired, true);
  });

  test('concurrent creates at the limit: exactly one succeeds', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_PER_USER: '3' });
    const alice = await site.createUser('alice');
    const { apiTokens } = site.composition.services;
    await site.token(alice, 'bearer');
    await site.token(alice, 'bearer');
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) =>
      apiTokens.create(site.customerId, { userId: alice.id, name: `race ${i}`, type: 'bearer' }, SYSTEM)));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(won.length, 1);
    assert.equal(lost.length, 11);
    for (const r of lost) assert.ok(r.reason instanceof LimitExceeded, String(r.reason));
    assert.equal((await apiTokens.list(site.customerId, alice.id)).length, 3);
  });

  test('concurrent creates over HTTP at the limit: exactly one 201', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_PER_USER: '2' });
    const alice = await site.createUser('alice');
    const { secret } = await site.token(alice, 'bearer');
    const responses = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      site.request('POST', '/rest/api/2/tokens', bearer(secret), { name: `race ${i}`, type: 'basic' })));
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [201, 400, 400, 400, 400, 400, 400, 400]);
    assert.equal(json(await site.get('/rest/api/2/tokens', bearer(secret)), 200).length, 2);
  });
});

describeEachStore('API token purge scheduler', (kind) => {
  test('deletes tokens expired for more than the configured days, and only those', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_PURGE_AFTER_DAYS: '7' });
    const alice = await site.createUser('alice');
    const { apiTokens } = site.composition.services;
    const soon = await site.token(alice, 'bearer', { expiresInDays: 1, name: 'soon' });
    const later = await site.token(alice, 'bearer', { expiresInDays: 5, name: 'later' });
    const live = await site.token(alice, 'basic', { expiresInDays: 30, name: 'live' });
    const scheduler = createPurgeScheduler({ tokens: apiTokens, intervalSeconds: 3600 });
    const names = async () => (await apiTokens.list(site.customerId, alice.id)).map((x) => x.name);

    // The purge is global: on the shared PostgreSQL schema it also meets other tests' tokens, so
    // this test follows its own rows rather than the counts.
    site.clock.advance(8 * DAY);
    await scheduler.runOnce();
    assert.deepEqual(await names(), ['soon', 'later', 'live']);
    site.clock.advance(1);
    assert.ok(await scheduler.runOnce() >= 1);
    assert.deepEqual(await names(), ['later', 'live']);
    site.clock.advance(4 * DAY);
    assert.ok(await scheduler.runOnce() >= 1);
    assert.deepEqual(await names(), ['live']);
    await assert.rejects(apiTokens.get(site.customerId, soon.id));
    await assert.rejects(apiTokens.get(site.customerId, later.id));
    json(await site.get('/rest/api/2/myself', basic('alice', live.secret)), 200);
  });

  test('start() purges at once and then on its interval; stop() waits for a run in progress', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_PURGE_AFTER_DAYS: '0' });
    const alice = await site.createUser('alice');
    const { apiTokens } = site.composition.services;
    await site.token(alice, 'bearer', { expiresInDays: 1 });
    site.clock.advance(DAY + 1);
    const purged: number[] = [];
    const scheduler = createPurgeScheduler({ tokens: apiTokens, intervalSeconds: 3600, onPurged: (n) => purged.push(n) });
    scheduler.start();
    scheduler.start();
    await scheduler.stop();
    assert.equal(purged.length, 1);
    assert.ok(purged[0] >= 1);
    assert.deepEqual(await apiTokens.list(site.customerId, alice.id), []);
  });

  test('several nodes purging at once delete every row exactly once, in batches, across customers', async (t) => {
    const site = await buildTokenSite(t, kind, {
      LATCHKEY_SITE_API_TOKEN_PURGE_AFTER_DAYS: '1', LATCHKEY_SITE_API_TOKEN_MAX_PER_USER: '1000',
    });
    const { apiTokens } = site.composition.services;
    const users = await Promise.all(['u1', 'u2', 'u3', 'u4'].map((name) => site.createUser(name)));
    const keeper = await site.token(users[0], 'basic', { expiresInDays: 300 });
    // 1100 expired tokens (and one of another customer): more than two purge batches.
    // 25 at a time: each create is a transaction, and hundreds at once would wait on the pool past its timeout.
    for (const user of users) {
      for (let start = 0; start < 275; start += 25) {
        await Promise.all(Array.from({ length: 25 }, (_, i) => apiTokens.create(site.customerId, { userId: user.id, name: `t${start + i}`, type: 'bearer', expiresInDays: 1 }, SYSTEM)));
      }
    }
    const other = await site.newCustomer();
    json(await other.admin.post('/admin/users/create', {
      customerKey: other.customer.customerKey, username: 'carol', email: 'carol@example.test', firstName: 'C', lastName: 'C',
    }), 200);
    const carol = (await site.composition.services.users.findByLogin(other.customer.customerId, 'carol'))!;
    const foreign = await apiTokens.create(other.customer.customerId, { userId: carol.id, name: 'foreign', type: 'basic', expiresInDays: 1 }, SYSTEM);
    site.clock.advance(2 * DAY + 1);
    const nodes = [1, 2, 3].map(() => createApiTokensService({
      db: site.composition.store.db, clock: site.clock, policy: site.composition.config.site.apiTokens, users: site.composition.services.users, audit: site.composition.services.audit,
    }));
    const { db } = site.composition.store;
    const rows = async () => Number((await db.selectFrom('api_tokens').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const before = await rows();
    const counts = await Promise.all(nodes.map((node) => createPurgeScheduler({ tokens: node, intervalSeconds: 60 }).runOnce()));
    // Every deleted row is counted once, by one node (other tests' rows may be among them on PostgreSQL).
    assert.equal(counts.reduce((a, b) => a + b, 0), before - await rows());
    assert.ok(before - await rows() >= 1101);
    await assert.rejects(apiTokens.get(other.customer.customerId, foreign.id));
    const left = (await Promise.all(users.map((u) => apiTokens.list(site.customerId, u.id)))).flat();
    assert.deepEqual(left.map((x) => x.id), [keeper.id]);
  });
});
