/**
 * Issue 22, item 12: one customer flooding the replay guard with distinct signed triples must refuse
 * only itself. The memory guard (SQLite store) keeps each customer to its share (it may add a triple
 * while it holds fewer than 4 times the free entries) and never drops a live entry to make room; the
 * PostgreSQL and Redis guards have no entry limit, so a flood there refuses nobody.
 * Small capacities (LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES, maxEntries) keep the floods short; time moves
 * by the test clock.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { signRequest } from '../../src/identity/admin-auth.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { createDatabaseReplayGuard, createRedisReplayGuard, createReplayGuard, DEFAULT_REPLAY_MAX_ENTRIES, type ReplayGuard } from '../../src/identity/replay-guard.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { build, testEnv, type TestApp } from '../helpers/app.ts';
import { postgresStore, postgresUrl } from '../helpers/stores.ts';

// Opened at file level: the helper's clean-up belongs to the file, not to the first test.
if (postgresUrl) await postgresStore();
const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

const GRACE_MS = 2000;
const WINDOW_MS = 300_000;
const STANDARD_DENIED = { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' };
const digest = () => randomBytes(64).toString('hex');

function count(app: TestApp, customer: CreatedCustomer, timestampMs: number): Promise<LightMyRequestResponse> {
  const timestamp = String(timestampMs);
  return app.identity.inject({
    method: 'GET',
    url: '/api/admin/users/stats/count',
    headers: { 'customer-key': customer.customerKey, timestamp, authorization: signRequest(customer.customerKey, timestamp, customer.apiKey) },
  });
}

/**
 * Signs `n` requests of `customer`, each a new triple (7 ms apart from `from`), and counts the 200s until the first refusal; every refusal must be the spec's 401.
 */
async function flood(app: TestApp, customer: CreatedCustomer, n: number, from = app.clock.now()): Promise<{ served: number; refused: number }> {
  let served = 0;
  let refused = 0;
  for (let i = 0; i < n; i++) {
    const response = await count(app, customer, from + i * 7);
    if (response.statusCode === 200) {
      assert.equal(refused, 0, 'a refused customer is not served again while its share is full');
      served++;
    } else {
      assert.equal(response.statusCode, 401, response.body);
      assert.deepEqual(response.json(), STANDARD_DENIED);
      refused++;
    }
  }
  return { served, refused };
}

/** `n` fresh signed requests of `customer`, a millisecond apart: all must be served. */
async function assertServed(app: TestApp, customer: CreatedCustomer, n: number): Promise<void> {
  const start = app.clock.now();
  for (let i = 0; i < n; i++) {
    const response = await count(app, customer, start + i);
    assert.equal(response.statusCode, 200, `request ${i} of ${n}: ${response.body}`);
  }
}

describe('replay guard in memory: a customer flooding it refuses only itself', () => {
  test('a flooding customer fills its share (4/5 of the guard) and gets 401; another customer\'s fresh signed requests keep succeeding', async (t) => {
    const app = await build(t, 'sqlite', { LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES: '100' });
    const other = await app.newCustomer();

    // 150 distinct triples dated ahead, as a flooder may (they live longest): 80 served (then 80 >= 4 x 20
    // free), the other 70 refused with the spec's body.
    const firstTimestamp = app.clock.now() + 200_000;
    assert.deepEqual(await flood(app, app.customer, 150, firstTimestamp), { served: 80, refused: 70 });
    // Another customer is served while the flooder keeps being refused.
    await assertServed(app, other.customer, 10);
    assert.deepEqual(await flood(app, app.customer, 5, app.clock.now()), { served: 0, refused: 5 });
    await assertServed(app, other.customer, 5);

    // Nothing the flooder holds was dropped: its first triple, replayed after the grace, is still refused.
    app.clock.advance(GRACE_MS + 1);
    const replayed = await count(app, app.customer, firstTimestamp);
    assert.equal(replayed.statusCode, 401);

    // Once its triples' timestamps have left the window, the flooder's share is free again.
    app.clock.advance(200_000 + WINDOW_MS);
    await assertServed(app, app.customer, 5);
    await assertServed(app, other.customer, 5);
  });

  test('a customer over its share is refused even when the guard has room, and no live entry is given up', () => {
    const clock = createTestClock();
    const reports: number[][] = [];
    const guard = createReplayGuard({
      clock, graceMs: GRACE_MS, windowMs: WINDOW_MS, maxEntries: 100,
      onShareFull: (customerId, held, total) => reports.push([customerId, held, total]),
    });
    const ts = clock.now();
    const a = Array.from({ length: 100 }, digest);
    const admittedA = a.filter((d) => guard.admit(1, d, ts)).length;
    assert.equal(admittedA, 80, 'alone, a customer gets 4/5 of the guard');
    assert.equal(guard.size(1), 80);
    // The operator hears of it once (20 refusals), the client sees only the usual 401.
    assert.deepEqual(reports, [[1, 80, 80]]);

    // Customer 2 takes what is left to it: it may add while it holds fewer than 4 x free (16 < 4 x 4).
    const b = Array.from({ length: 30 }, digest);
    assert.equal(b.filter((d) => guard.admit(2, d, ts)).length, 16);
    // Customer 3, a newcomer, still gets in: the flooders stopped short of the capacity.
    assert.equal(guard.admit(3, digest(), ts), true);
    assert.ok(guard.size() <= 100);

    // Within the grace a known triple still passes, whoever is over its share; after it, every one of
    // customer 1's triples is a replay: none was dropped to make room.
    assert.equal(guard.admit(1, a[0]!, ts), true);
    clock.advance(GRACE_MS + 1);
    for (const d of a.slice(0, 80)) assert.equal(guard.admit(1, d, ts), false);
    assert.equal(guard.size(1), 80);
    // A minute on, still refused (its triples are live for 5 minutes) and reported again (customer 2
    // was reported when it reached its share).
    clock.advance(60_000);
    assert.equal(guard.admit(1, digest(), ts), false);
    assert.deepEqual(reports, [[1, 80, 80], [2, 16, 96], [1, 80, 97]]);

    // The window over, every share is free again.
    clock.advance(WINDOW_MS);
    guard.sweep();
    assert.equal(guard.size(), 0);
    assert.equal(guard.admit(1, digest(), clock.now()), true);
  });

  test('customers flooding at once share the guard evenly and leave room for a newcomer', () => {
    const clock = createTestClock();
    const guard = createReplayGuard({ clock, graceMs: GRACE_MS, windowMs: WINDOW_MS, maxEntries: 1300 });
    const ts = clock.now();
    // Three customers interleaved, 1,000 distinct triples each: each ends with 4/(1 + 4 x 3) of 1,300 = 400.
    for (let i = 0; i < 1000; i++) for (const customer of [1, 2, 3]) guard.admit(customer, digest(), ts);
    assert.deepEqual([guard.size(1), guard.size(2), guard.size(3)], [400, 400, 400]);
    assert.equal(guard.size(), 1200);
    // 100 entries stay free: a customer that signs little is served.
    for (let i = 0; i < 50; i++) assert.equal(guard.admit(4, digest(), ts), true);
  });

  test('the capacity is 500,000 live triples unless LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES says otherwise', () => {
    assert.equal(DEFAULT_REPLAY_MAX_ENTRIES, 500_000);
    assert.equal(loadConfig(testEnv()).admin.replayMaxEntries, 500_000);
    assert.equal(loadConfig(testEnv({ LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES: '2000000' })).admin.replayMaxEntries, 2_000_000);
    assert.throws(() => loadConfig(testEnv({ LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES: '99' })), /LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES must be between 100 and 100000000/);
  });

  test('only many customers each signing little can fill the guard; a newcomer is then refused, and the operator told', () => {
    const clock = createTestClock();
    const reports: number[][] = [];
    const guard = createReplayGuard({
      clock, graceMs: GRACE_MS, windowMs: WINDOW_MS, maxEntries: 100,
      onShareFull: (customerId, held, total) => reports.push([customerId, held, total]),
    });
    const ts = clock.now();
    // 100 customers, one triple each: nobody over its share, and the guard is full.
    for (let customer = 1; customer <= 100; customer++) assert.equal(guard.admit(customer, digest(), ts), true);
    assert.equal(guard.size(), 100);
    assert.equal(guard.admit(101, digest(), ts), false);
    assert.equal(guard.admit(102, digest(), ts), false);
    assert.deepEqual(reports, [[101, 0, 100]], 'once a minute for the customers refused while holding nothing');
  });
});

/** A flood of distinct triples for customer 1, in turns of 500, then customer 2's and 1's fresh triples. */
async function assertNoEntryLimit(guard: ReplayGuard, clock: { now(): number; advance(ms: number): void }, triples: string[]): Promise<void> {
  const ts = clock.now();
  const flooded = triples.length;
  for (let i = 0; i < flooded; i += 500) {
    const answers = await Promise.all(triples.slice(i, i + 500).map((d) => guard.admit(1, d, ts)));
    assert.ok(answers.every(Boolean), `turn ${i / 500}: a new triple was refused`);
  }
  assert.equal(await guard.admit(2, digest(), ts), true);
  assert.equal(await guard.admit(1, digest(), ts), true);
  // Still a replay guard: past the grace, the flood's triples are refused.
  clock.advance(GRACE_MS + 1);
  assert.deepEqual(await Promise.all(triples.slice(0, 20).map((d) => guard.admit(1, d, ts))), Array(20).fill(false));
}

describe('replay guard in PostgreSQL: no entry limit, so a flood refuses nobody', { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, () => {
  test('5,000 distinct triples of one customer (50 x a memory guard of 100) and both customers are still admitted', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    await assertNoEntryLimit(createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS }), clock, Array.from({ length: 5000 }, digest));
  });

  test('signed requests: LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES bounds the memory guard only; a flooding customer and another are both served', async (t) => {
    const app = await build(t, 'postgres', { LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES: '100' });
    const other = await app.newCustomer();
    assert.deepEqual(await flood(app, app.customer, 150), { served: 150, refused: 0 });
    await assertServed(app, other.customer, 10);
  });
});

describe('replay guard in Redis: no entry limit, so a flood refuses nobody', { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
  test('5,000 distinct triples of one customer and both customers are still admitted', async (t: TestContext) => {
    const redis = new Redis(redisUrl!);
    const clock = createTestClock(Date.now());
    // A prefix of its own, its keys deleted at the end: the flood leaves nothing behind for 5 minutes.
    const prefix = `latchkey-test:replay:${randomBytes(4).toString('hex')}:`;
    const triples = Array.from({ length: 5000 }, digest);
    t.after(async () => {
      for (let i = 0; i < triples.length; i += 1000) await redis.del(...triples.slice(i, i + 1000).map((d) => prefix + d.slice(0, 32)));
      redis.disconnect();
    });
    await assertNoEntryLimit(createRedisReplayGuard({ redis, prefix, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS }), clock, triples);
  });

  test('signed requests on a SQLite store with Redis: a flooding customer and another are both served', async (t) => {
    const app = await build(t, 'sqlite', { LATCHKEY_REDIS_URL: redisUrl!, LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES: '100' });
    const other = await app.newCustomer();
    assert.deepEqual(await flood(app, app.customer, 150), { served: 150, refused: 0 });
    await assertServed(app, other.customer, 10);
  });
});
