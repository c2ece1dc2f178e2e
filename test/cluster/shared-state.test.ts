/**
 * State that every node of a cluster must share (issue 17 part 1), with two compositions on one
 * store standing for two nodes: the admin replay guard (PostgreSQL by default, Redis when
 * LATCHKEY_REDIS_URL is set; on SQLite, one node's store, it stays in memory), periodic jobs claimed once per cluster, and the per-address rate
 * limits with the IETF draft's headers, answered in each face's own error body.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { signRequest } from '../../src/identity/admin-auth.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { createTestClock, type TestClock } from '../../src/lib/clock.ts';
import { createPurgeScheduler } from '../../src/site/api-tokens/scheduler.ts';
import { claimRun } from '../../src/store/cluster-jobs.ts';
import type { Store } from '../../src/store/db.ts';
import { describeEachStore, openTestStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const DENIED = { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' };
const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

interface Cluster {
  clock: TestClock;
  store: Store;
  nodes: { composition: Composition; identity: FastifyInstance }[];
  customer: CreatedCustomer;
}

/** `count` compositions on one store, one master key and one clock: the nodes of one cluster. */
async function cluster(t: TestContext, kind: StoreKind, count: number, env: Record<string, string> = {}): Promise<Cluster> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const shared = {
    LATCHKEY_DATABASE_URL: ':memory:',
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_LOG_LEVEL: 'silent',
    ...env,
  };
  const nodes: Cluster['nodes'] = [];
  for (let i = 0; i < count; i++) {
    const config = loadConfig({ ...shared, LATCHKEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'latchkey-cluster-')) });
    const composition = await compose(config, { clock, store });
    nodes.push({ composition, identity: await composition.buildIdentityApp() });
  }
  t.after(async () => {
    for (const node of nodes) { await node.identity.close(); await node.composition.close(); }
    if (owned) await store.close();
  });
  const customer = await nodes[0]!.composition.services.customers.create({ email: `cluster-${randomBytes(4).toString('hex')}@example.test` });
  return { clock, store, nodes, customer };
}

function signed(customer: CreatedCustomer, timestampMs: number): Record<string, string> {
  const timestamp = String(timestampMs);
  return { 'customer-key': customer.customerKey, timestamp, authorization: signRequest(customer.customerKey, timestamp, customer.apiKey) };
}

const count = (identity: FastifyInstance, headers: Record<string, string>): Promise<LightMyRequestResponse> =>
  identity.inject({ method: 'GET', url: '/api/admin/users/stats/count', headers });

async function assertReplayRefusedAcrossNodes(c: Cluster): Promise<void> {
  const [a, b] = c.nodes;
  const headers = signed(c.customer, c.clock.now());
  assert.equal((await count(a!.identity, headers)).statusCode, 200);
  c.clock.advance(2001);
  // Node B has never seen it: only a shared guard knows it was first used on A.
  const replayed = await count(b!.identity, headers);
  assert.equal(replayed.statusCode, 401, replayed.body);
  assert.deepEqual(replayed.json(), DENIED);
  assert.equal((await count(a!.identity, headers)).statusCode, 401);
  // Within the grace a triple passes on the other node (same-millisecond client calls)...
  const fresh = signed(c.customer, c.clock.now());
  assert.equal((await count(a!.identity, fresh)).statusCode, 200);
  c.clock.advance(2000);
  assert.equal((await count(b!.identity, fresh)).statusCode, 200);
  // ...and not a millisecond later.
  c.clock.advance(1);
  assert.equal((await count(b!.identity, fresh)).statusCode, 401);
}

describeEachStore('replay guard shared by the nodes (database)', (kind) => {
  if (kind === 'sqlite') {
    // A SQLite file is one node's store: the guard is in its memory and a signed request writes nothing.
    test('SQLite: the guard is the node\'s memory; a triple is refused after the 2 s grace, and nothing is written', async (t) => {
      const c = await cluster(t, kind, 1);
      const identity = c.nodes[0]!.identity;
      const headers = signed(c.customer, c.clock.now());
      assert.equal((await count(identity, headers)).statusCode, 200);
      c.clock.advance(2000);
      assert.equal((await count(identity, headers)).statusCode, 200);
      c.clock.advance(1);
      const replayed = await count(identity, headers);
      assert.equal(replayed.statusCode, 401, replayed.body);
      assert.deepEqual(replayed.json(), DENIED);
      const rows = await c.store.db.selectFrom('admin_replay_guard').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(rows.n), 0);
    });
    return;
  }

  test('a triple used on node A is refused on node B after the 2 s grace', async (t) => {
    await assertReplayRefusedAcrossNodes(await cluster(t, kind, 2));
  });

  test('concurrent first uses on both nodes agree: after the grace the triple is refused everywhere', async (t) => {
    const c = await cluster(t, kind, 3);
    const headers = signed(c.customer, c.clock.now());
    const first = await Promise.all(c.nodes.slice(0, 2).flatMap((n) => [count(n.identity, headers), count(n.identity, headers)]));
    assert.deepEqual(first.map((r) => r.statusCode), [200, 200, 200, 200]);
    c.clock.advance(2001);
    const later = await Promise.all(c.nodes.map((n) => count(n.identity, headers)));
    assert.deepEqual(later.map((r) => r.statusCode), [401, 401, 401]);
  });

  test('expired triples are deleted in batches, not kept forever', async (t) => {
    const c = await cluster(t, kind, 1);
    const before = await c.store.db.selectFrom('admin_replay_guard').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const headers = signed(c.customer, c.clock.now());
    assert.equal((await count(c.nodes[0]!.identity, headers)).statusCode, 200);
    const row = await c.store.db.selectFrom('admin_replay_guard').selectAll().where('digest_prefix', '=', headers.authorization!.slice(0, 32)).executeTakeFirst();
    assert.ok(row, 'the triple is recorded');
    assert.equal(Number(row.expires_at), Number(headers.timestamp) + 300_000);
    await c.store.db.insertInto('admin_replay_guard')
      .values(Array.from({ length: 25 }, (_, i) => ({ digest_prefix: `expired-${randomBytes(6).toString('hex')}-${i}`, first_seen: 0, expires_at: c.clock.now() - 1 })))
      .execute();
    const guard = (await import('../../src/identity/replay-guard.ts')).createDatabaseReplayGuard({ db: c.store.db, clock: c.clock, graceMs: 2000, windowMs: 300_000, purgeBatch: 10 });
    assert.ok(await guard.purgeExpired() >= 25);
    const left = await c.store.db.selectFrom('admin_replay_guard').select('digest_prefix').where('digest_prefix', 'like', 'expired-%').execute();
    assert.deepEqual(left, []);
    const after = await c.store.db.selectFrom('admin_replay_guard').select('digest_prefix').where('digest_prefix', '=', row.digest_prefix).execute();
    assert.equal(after.length, 1, 'a live triple stays');
    assert.ok(Number(before.n) >= 0);
  });
});

describe('replay guard shared by the nodes (Redis, LATCHKEY_REDIS_URL)', { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
  test('a triple used on node A is refused on node B after the 2 s grace; Redis expires it with the window', async (t) => {
    const c = await cluster(t, 'sqlite', 2, { LATCHKEY_REDIS_URL: redisUrl! });
    await assertReplayRefusedAcrossNodes(c);
    const redis = new Redis(redisUrl!);
    t.after(() => redis.disconnect());
    const headers = signed(c.customer, c.clock.now());
    assert.equal((await count(c.nodes[0]!.identity, headers)).statusCode, 200);
    const ttl = await redis.pttl(`latchkey:replay:${headers.authorization!.slice(0, 32)}`);
    assert.ok(ttl > 290_000 && ttl <= 300_000, `ttl ${ttl}`);
  });
});

describeEachStore('periodic jobs run once per cluster', (kind) => {
  test('of three nodes claiming at once, one runs the job; the next interval is claimed once again', async (t) => {
    const { store, owned } = await openTestStore(kind);
    if (owned) t.after(() => store.close());
    const name = `job-${randomBytes(4).toString('hex')}`;
    const now = Date.now();
    const first = await Promise.all(['a', 'b', 'c'].map((node) => claimRun(store.db, name, 1000, now, node)));
    assert.equal(first.filter(Boolean).length, 1);
    const early = await Promise.all(['a', 'b', 'c'].map((node) => claimRun(store.db, name, 1000, now + 999, node)));
    assert.equal(early.filter(Boolean).length, 0, 'not due before the interval');
    const next = await Promise.all(['a', 'b', 'c'].map((node) => claimRun(store.db, name, 1000, now + 1000, node)));
    assert.equal(next.filter(Boolean).length, 1);
    const row = await store.db.selectFrom('scheduler_runs').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
    assert.equal(Number(row.runs), 2);
    assert.equal(Number(row.next_run_at), now + 2000);
  });

  test('the API-token purge of three started nodes runs once, not once per node', async (t) => {
    const { store, owned } = await openTestStore(kind);
    if (owned) t.after(() => store.close());
    const name = `api-token-purge-${randomBytes(4).toString('hex')}`;
    let purges = 0;
    const schedulers = ['a', 'b', 'c'].map((node) => createPurgeScheduler({
      tokens: { purgeExpired: async () => { purges++; return 0; } },
      intervalSeconds: 3600,
      claim: (intervalMs) => claimRun(store.db, name, intervalMs, Date.now(), node),
    }));
    for (const s of schedulers) s.start();
    // Each start ticks at once; wait (bounded) for the three claims to be decided.
    const deadline = Date.now() + 5000;
    for (;;) {
      const row = await store.db.selectFrom('scheduler_runs').selectAll().where('name', '=', name).executeTakeFirst();
      if (row && purges >= 1) break;
      assert.ok(Date.now() < deadline, 'no purge ran');
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(schedulers.map((s) => s.stop()));
    assert.equal(purges, 1);
  });
});

describeEachStore('rate limits per route family', (kind) => {
  test('admin API: the budget per address, RateLimit and RateLimit-Policy headers, then 429 in the standard body with Retry-After', async (t) => {
    const c = await cluster(t, kind, 1, { LATCHKEY_RATE_LIMIT_ADMIN: '3/60' });
    const identity = c.nodes[0]!.identity;
    for (let i = 0; i < 3; i++) {
      c.clock.advance(1);
      const ok = await count(identity, signed(c.customer, c.clock.now()));
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(ok.headers['ratelimit-policy'], '"admin";q=3;w=60');
      assert.match(String(ok.headers.ratelimit), new RegExp(`^"admin";r=${2 - i};t=\\d+$`));
    }
    const refused = await count(identity, signed(c.customer, c.clock.now() + 1));
    assert.equal(refused.statusCode, 429, refused.body);
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(refused.headers['retry-after']));
    assert.deepEqual(refused.json(), { status: 'ERROR', code: '429', message: `Too many requests: retry after ${retryAfter} seconds.` });
    assert.match(String(refused.headers.ratelimit), /^"admin";r=0;t=\d+$/);
    // Another family keeps its own budget; health is in none.
    assert.equal((await identity.inject({ method: 'GET', url: '/healthz' })).headers['ratelimit'], undefined);
  });

  test('site token endpoint: 429 in the site error body with Retry-After', async (t) => {
    const c = await cluster(t, kind, 1, { LATCHKEY_RATE_LIMIT_SITE_TOKEN: '2/60' });
    const site = await c.nodes[0]!.composition.buildSiteApp({ customerKey: c.customer.customerKey });
    t.after(() => site.close());
    const attempt = () => site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'nobody', password: 'wrong-password-1' } });
    for (let i = 0; i < 2; i++) {
      const res = await attempt();
      assert.notEqual(res.statusCode, 429);
      assert.equal(res.headers['ratelimit-policy'], '"site-token";q=2;w=60');
    }
    const refused = await attempt();
    assert.equal(refused.statusCode, 429, refused.body);
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    assert.deepEqual(refused.json(), { status: 'error', error: 'TOO_MANY_REQUESTS', code: '429', error_description: `Too many requests: retry after ${retryAfter} seconds.` });
  });

  test('oauth token and landing: 429 with Retry-After in their own shapes', async (t) => {
    const c = await cluster(t, kind, 1, { LATCHKEY_RATE_LIMIT_OAUTH_TOKEN: '1/60', LATCHKEY_RATE_LIMIT_LANDING: '1/60' });
    const identity = c.nodes[0]!.identity;
    const token = () => identity.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' });
    assert.notEqual((await token()).statusCode, 429);
    const refused = await token();
    assert.equal(refused.statusCode, 429, refused.body);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(refused.headers['cache-control'], 'no-store');
    assert.deepEqual(Object.keys(refused.json()).sort(), ['error', 'error_description']);
    assert.equal(refused.json().error, 'temporarily_unavailable');

    const landing = () => identity.inject({ method: 'GET', url: '/magic/not-a-real-token' });
    assert.notEqual((await landing()).statusCode, 429);
    const page = await landing();
    assert.equal(page.statusCode, 429);
    assert.ok(Number(page.headers['retry-after']) >= 1);
    assert.match(String(page.headers['content-type']), /^text\/html/);
  });
});
