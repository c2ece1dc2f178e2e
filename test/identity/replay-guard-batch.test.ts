/**
 * The PostgreSQL replay guard writes the digests admitted in one event-loop turn with one statement.
 * Many requests at once must get exactly the answers one statement each would give: a new triple is
 * admitted, the same triple twice in one turn is admitted twice (the grace covers same-millisecond
 * calls), a triple first seen more than the grace ago is refused, and two guards (two nodes) racing on
 * one triple agree on its first use. A node asks once per triple (PostgreSQL or Redis): later calls with
 * it share the answer.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createDatabaseReplayGuard, createRedisReplayGuard, type SharedReplayGuard } from '../../src/identity/replay-guard.ts';
import { createTestClock, type TestClock } from '../../src/lib/clock.ts';
import { postgresStore, postgresUrl } from '../helpers/stores.ts';

const GRACE_MS = 2000;
const WINDOW_MS = 300_000;
const digest = () => randomBytes(64).toString('hex');

if (postgresUrl) await postgresStore();

/**
 * Node `a` (whose questions to the store `asked` counts) and node `b` on one store: `a` asks once per
 * triple, its further calls share the answer within the grace, and both agree on the first use.
 */
async function assertAskedOncePerTriple(a: SharedReplayGuard, b: SharedReplayGuard, clock: TestClock, asked: () => number): Promise<void> {
  const d = digest();
  // A busy client's calls with one triple, in this turn and the next ones, while the question runs.
  const first = a.admit(1, d, clock.now());
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const second = a.admit(1, d, clock.now());
  assert.deepEqual([await first, await second], [true, true]);
  clock.advance(GRACE_MS / 2);
  assert.equal(await a.admit(1, d, clock.now()), true);
  assert.equal(asked(), 1);
  // The other node records nothing new: it gets the first use node a made.
  assert.equal(await b.admit(1, d, clock.now()), true);
  clock.advance(GRACE_MS / 2 + 1);
  assert.deepEqual([await a.admit(1, d, clock.now()), await b.admit(1, d, clock.now())], [false, false]);
  // A triple first used on the other node is refused here after the grace, though this node never saw it.
  const elsewhere = digest();
  assert.equal(await b.admit(1, elsewhere, clock.now()), true);
  clock.advance(GRACE_MS + 1);
  assert.equal(await a.admit(1, elsewhere, clock.now()), false);
}

/**
 * A store that answers after the grace has run out (a grace of 0, a round trip of a second) still
 * admits a triple's first use, and still refuses its replay: the verdict is the moment of asking's.
 */
async function assertSlowAnswerAdmitsFirstUse(guard: SharedReplayGuard, clock: TestClock): Promise<void> {
  const d = digest();
  assert.equal(await guard.admit(1, d, clock.now()), true, 'a first use answered after the grace');
  assert.equal(await guard.admit(1, d, clock.now()), false, 'its replay');
}

describe('replay guard, statements shared by a turn [postgres]', { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, () => {
  test('concurrent admits: new and doubled triples pass, a triple first seen past the grace is refused, a failure refuses every waiter', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    const guard = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });

    const old = digest();
    assert.equal(await guard.admit(1, old, clock.now()), true);
    clock.advance(GRACE_MS + 1);

    const fresh = Array.from({ length: 20 }, digest);
    const requests = [...fresh, ...fresh.slice(0, 5), old, old];
    const answers = await Promise.all(requests.map((d) => guard.admit(1, d, clock.now())));
    assert.deepEqual(answers, [...Array(25).fill(true), false, false]);

    // Each triple is one row, with the longest expiry asked for.
    const rows = await store.db.selectFrom('admin_replay_guard').select(['digest_prefix', 'expires_at'])
      .where('digest_prefix', 'in', fresh.map((d) => d.slice(0, 32))).execute();
    assert.equal(rows.length, 20);

    // Past the grace, every one of them is a replay, in one turn as in separate ones.
    clock.advance(GRACE_MS + 1);
    assert.deepEqual(await Promise.all(fresh.map((d) => guard.admit(1, d, clock.now()))), Array(20).fill(false));
  });

  test('two nodes admitting one triple in the same instant agree: both within the grace, both refused after it', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    const a = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const b = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const d = digest();
    assert.deepEqual(await Promise.all([a.admit(1, d, clock.now()), b.admit(1, d, clock.now())]), [true, true]);
    clock.advance(GRACE_MS + 1);
    assert.deepEqual(await Promise.all([a.admit(1, d, clock.now()), b.admit(1, d, clock.now())]), [false, false]);
  });

  test('a node asks the database once per triple: further calls, in flight or answered, share its answer within the grace, and another node agrees', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    let statements = 0;
    const counted = store.db.withPlugin({
      transformQuery: (args) => { statements++; return args.node; },
      transformResult: async (args) => args.result,
    });
    const a = createDatabaseReplayGuard({ db: counted, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const b = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    await assertAskedOncePerTriple(a, b, clock, () => statements);
  });

  test('a failed statement is not remembered: the same triple asks again and is admitted', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    let failNext = true;
    const flaky = store.db.withPlugin({
      transformQuery: (args) => {
        if (failNext) { failNext = false; throw new Error('Connection terminated unexpectedly'); }
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const guard = createDatabaseReplayGuard({ db: flaky, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const d = digest();
    await assert.rejects(guard.admit(1, d, clock.now()), /Connection terminated/);
    assert.equal(await guard.admit(1, d, clock.now()), true);
  });

  test('a first use is admitted however long the database takes to answer, and its replay refused', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    const slow = store.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => { clock.advance(1000); return args.result; },
    });
    await assertSlowAnswerAdmitsFirstUse(createDatabaseReplayGuard({ db: slow, clock, graceMs: 0, windowMs: WINDOW_MS }), clock);
  });

  test('a database error refuses every request of the turn (fails closed) and the next turn works again', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    // A guard whose database rejects: every statement fails as a dropped connection would.
    const failing = createDatabaseReplayGuard({
      db: { insertInto: () => { throw new Error('Connection terminated unexpectedly'); } } as unknown as typeof store.db,
      clock, graceMs: GRACE_MS, windowMs: WINDOW_MS,
    });
    const results = await Promise.allSettled([failing.admit(1, digest(), clock.now()), failing.admit(1, digest(), clock.now())]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    const working = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    assert.equal(await working.admit(1, digest(), clock.now()), true);
  });
});

const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

describe('replay guard in Redis, asked once per triple', { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
  test("one SET per triple and node; the triple's further calls share its answer, and another node agrees", async (t) => {
    const redis = new Redis(redisUrl!);
    t.after(() => redis.disconnect());
    let commands = 0;
    const counted = { call: (...args: Parameters<Redis['call']>) => { commands++; return redis.call(...args); } } as unknown as Redis;
    const clock = createTestClock(Date.now());
    const prefix = `latchkey:test:${randomBytes(4).toString('hex')}:`;
    const a = createRedisReplayGuard({ redis: counted, prefix, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const b = createRedisReplayGuard({ redis, prefix, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    await assertAskedOncePerTriple(a, b, clock, () => commands);
  });

  test('a first use is admitted however long Redis takes to answer, and its replay refused', async (t) => {
    const redis = new Redis(redisUrl!);
    t.after(() => redis.disconnect());
    const clock = createTestClock(Date.now());
    const slow = { call: async (...args: Parameters<Redis['call']>) => { const reply = await redis.call(...args); clock.advance(1000); return reply; } } as unknown as Redis;
    const prefix = `latchkey:test:${randomBytes(4).toString('hex')}:`;
    await assertSlowAnswerAdmitsFirstUse(createRedisReplayGuard({ redis: slow, prefix, clock, graceMs: 0, windowMs: WINDOW_MS }), clock);
  });
});
