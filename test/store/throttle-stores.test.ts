/**
 * The throttle stores (issue 17 part 1): the same behaviour from the database store (SQLite, and
 * PostgreSQL with a second pool standing for a second node) and the Redis store (two ioredis clients
 * standing for two nodes): budget, escalating blocks up to the cap, the window, giving a place back,
 * longer blocks, clearing, all-or-none over several keys, reservations tied to a write, and 30
 * concurrent reservations from two nodes getting exactly the budget. Redis also: keys expire by
 * themselves, and a Redis that cannot be reached refuses the attempt (fails closed).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test, type TestContext } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Redis } from 'ioredis';
import { createLoginThrottle, delayMs } from '../../src/store/throttles/login.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { RateLimited } from '../../src/lib/errors.ts';
import type { Database } from '../../src/store/schema.ts';
import { createStore, type Store } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { createRedis } from '../../src/store/redis.ts';
import { createDatabaseThrottleStore } from '../../src/store/throttles/database.ts';
import { createRedisThrottleStore } from '../../src/store/throttles/redis.ts';
import { reserveForWrite } from '../../src/store/throttles/reserve-for-write.ts';
import type { Limit, ReserveOutcome, Reserved, ThrottleStore } from '../../src/store/throttles/types.ts';
import { freePort } from '../helpers/ports.ts';
import { postgresSchema, postgresStore, postgresUrl } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();
const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

const T = 1_700_000_000_000;
const WINDOW = 15 * 60_000;
const limit = (budget: number, maxDelaySeconds = 8): Limit => ({ budget, delayMs: (n) => delayMs(n, budget, maxDelaySeconds) });

/** Two nodes' views of one store, and a database for the writes reservations are tied to. */
interface Nodes { a: ThrottleStore; b: ThrottleStore; db: Store['db'] }

async function sqliteStore(t: TestContext): Promise<Store> {
  const store = await createStore(':memory:');
  await migrate(store);
  t.after(() => store.close());
  return store;
}

/** A Redis client as the server makes it, its keys under `prefix` deleted when the test ends. */
async function redisClient(t: TestContext, prefix: string): Promise<Redis> {
  const redis = await createRedis(redisUrl!);
  t.after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return redis;
}

const implementations: { name: string; skip: string | false; open(t: TestContext): Promise<Nodes> }[] = [
  {
    name: 'database store, SQLite',
    skip: false,
    async open(t) {
      // One node's store: both "nodes" are the one connection.
      const store = await sqliteStore(t);
      const s = createDatabaseThrottleStore({ db: store.db });
      return { a: s, b: s, db: store.db };
    },
  },
  {
    name: 'database store, PostgreSQL',
    skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set',
    async open(t) {
      const shared = await postgresStore();
      // A second pool on the same schema: another node's connections.
      const second = await createStore(postgresUrl!, { schema: await postgresSchema(), poolSize: 5 });
      t.after(() => second.close());
      return { a: createDatabaseThrottleStore({ db: shared.db }), b: createDatabaseThrottleStore({ db: second.db }), db: shared.db };
    },
  },
  {
    name: 'Redis store',
    skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set',
    async open(t) {
      const prefix = `latchkey-test:throttle:${randomBytes(6).toString('hex')}:`;
      const [a, b] = [await redisClient(t, prefix), await redisClient(t, prefix)];
      return { a: createRedisThrottleStore({ redis: a, prefix }), b: createRedisThrottleStore({ redis: b, prefix }), db: (await sqliteStore(t)).db };
    },
  },
];

// Tests of a file share the PostgreSQL schema: each uses its own keys.
const newKey = (label: string) => `${label}:${randomBytes(6).toString('hex')}`;
const reserveOne = (s: ThrottleStore, key: string, l: Limit, now: number) => s.reserve([{ key, limit: l }], now, now - WINDOW);

function granted(outcome: ReserveOutcome): Reserved {
  assert.ok('reserved' in outcome, `refused: ${JSON.stringify(outcome)}`);
  return outcome.reserved[0]!;
}

for (const impl of implementations) {
  describe(`throttle store: ${impl.name}`, { skip: impl.skip }, () => {
    test('below the budget attempts pass unblocked; the one reaching it blocks the key for 1 s; the next is refused with that block', async (t) => {
      const { a } = await impl.open(t);
      const key = newKey('budget');
      const l = limit(3);
      assert.deepEqual(granted(await reserveOne(a, key, l, T)), { count: 1, blockedUntil: 0 });
      assert.deepEqual(granted(await reserveOne(a, key, l, T)), { count: 2, blockedUntil: 0 });
      assert.deepEqual(granted(await reserveOne(a, key, l, T)), { count: 3, blockedUntil: T + 1000 });
      assert.deepEqual(await reserveOne(a, key, l, T + 999), { refused: { key, blockedUntil: T + 1000 } });
      assert.equal(await a.blockedUntil(key), T + 1000);
      assert.equal(await a.blockedUntil(newKey('never-seen')), 0);
    });

    test('each attempt past the budget blocks twice as long as the one before, up to the cap', async (t) => {
      const { a } = await impl.open(t);
      const key = newKey('escalation');
      const l = limit(1, 8);
      let now = T;
      const blocks: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = granted(await reserveOne(a, key, l, now));
        assert.equal(r.count, i + 1);
        blocks.push(r.blockedUntil - now);
        now = r.blockedUntil;
      }
      assert.deepEqual(blocks, [1000, 2000, 4000, 8000, 8000, 8000]);
    });

    test('a key whose last attempt left the window counts from 1 again (an attempt exactly at its edge still counts on)', async (t) => {
      const { a } = await impl.open(t);
      const key = newKey('window');
      const l = limit(10);
      granted(await reserveOne(a, key, l, T));
      granted(await reserveOne(a, key, l, T));
      assert.equal(granted(await reserveOne(a, key, l, T + WINDOW)).count, 3);
      assert.equal(granted(await reserveOne(a, key, l, T + 2 * WINDOW + 1)).count, 1);
    });

    test('unreserve gives the place back and lifts the block it set, but not a longer block set since', async (t) => {
      const { a } = await impl.open(t);
      const key = newKey('unreserve');
      const l = limit(3);
      granted(await reserveOne(a, key, l, T));
      granted(await reserveOne(a, key, l, T));
      const third = granted(await reserveOne(a, key, l, T));
      await a.unreserve(key, third);
      assert.equal(await a.blockedUntil(key), 0);
      const again = granted(await reserveOne(a, key, l, T));
      assert.deepEqual(again, { count: 3, blockedUntil: T + 1000 });
      await a.extendBlock(key, T + 60_000, T);
      await a.unreserve(key, again);
      assert.equal(await a.blockedUntil(key), T + 60_000);
      assert.deepEqual(await reserveOne(a, key, l, T + 59_999), { refused: { key, blockedUntil: T + 60_000 } });
      // Past the block: the count went down by the place given back.
      assert.equal(granted(await reserveOne(a, key, l, T + 60_000)).count, 3);
    });

    test('extendBlock lengthens a block, never shortens it, and leaves an unknown key alone', async (t) => {
      const { a, b } = await impl.open(t);
      const key = newKey('extend');
      const l = limit(1);
      granted(await reserveOne(a, key, l, T));
      await b.extendBlock(key, T + 500, T);
      assert.equal(await a.blockedUntil(key), T + 1000);
      await b.extendBlock(key, T + 5000, T);
      assert.equal(await a.blockedUntil(key), T + 5000);
      assert.deepEqual(await reserveOne(a, key, l, T + 4999), { refused: { key, blockedUntil: T + 5000 } });
      const unknown = newKey('extend-unknown');
      await a.extendBlock(unknown, T + 5000, T);
      assert.equal(await a.blockedUntil(unknown), 0);
      assert.equal(granted(await reserveOne(a, unknown, limit(5), T)).count, 1);
    });

    test('clear forgets a blocked key: its next attempt is its first', async (t) => {
      const { a, b } = await impl.open(t);
      const key = newKey('clear');
      const l = limit(1);
      granted(await reserveOne(a, key, l, T));
      await b.clear(key);
      assert.equal(await a.blockedUntil(key), 0);
      assert.deepEqual(granted(await reserveOne(a, key, l, T)), { count: 1, blockedUntil: T + 1000 });
    });

    test('several keys are reserved all or none: a blocked user key takes no place on the address key', async (t) => {
      const { a } = await impl.open(t);
      const ip = newKey('ip');
      const user = newKey('user');
      const both = [{ key: ip, limit: limit(10) }, { key: user, limit: limit(1) }];
      assert.deepEqual(await a.reserve(both, T, T - WINDOW), { reserved: [{ count: 1, blockedUntil: 0 }, { count: 1, blockedUntil: T + 1000 }] });
      assert.deepEqual(await a.reserve(both, T + 10, T + 10 - WINDOW), { refused: { key: user, blockedUntil: T + 1000 } });
      assert.equal(granted(await reserveOne(a, ip, limit(10), T + 20)).count, 2);
    });

    test('a place reserved for a write: a failed write leaves the count as it was, a refused one writes nothing', async (t) => {
      const { a, db } = await impl.open(t);
      const key = newKey('cap');
      const l: Limit = { budget: 2, delayMs: (n) => (n >= 2 ? WINDOW : 0) };
      let writes = 0;
      const write = async (trx: Transaction<Database>) => {
        await sql`select 1`.execute(trx);
        return ++writes;
      };
      await assert.rejects(reserveForWrite(a, db, { key, limit: l }, T, T - WINDOW, async (trx) => {
        await write(trx);
        throw new Error('the write failed');
      }), /the write failed/);
      assert.deepEqual(await reserveForWrite(a, db, { key, limit: l }, T, T - WINDOW, write), { value: 2 });
      assert.deepEqual(await reserveForWrite(a, db, { key, limit: l }, T, T - WINDOW, write), { value: 3 });
      assert.deepEqual(await reserveForWrite(a, db, { key, limit: l }, T + 1, T + 1 - WINDOW, write), { refused: { key, blockedUntil: T + WINDOW } });
      assert.equal(writes, 3);
    });

    test('30 concurrent reservations on one key from two nodes: exactly the budget granted, the rest refused with its block', async (t) => {
      const { a, b } = await impl.open(t);
      const key = newKey('race');
      const l = limit(5);
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => reserveOne(i % 2 ? b : a, key, l, T)));
      const counts = outcomes.flatMap((o) => ('reserved' in o ? [o.reserved[0]!.count] : [])).sort((x, y) => x - y);
      assert.deepEqual(counts, [1, 2, 3, 4, 5]);
      for (const o of outcomes) if ('refused' in o) assert.deepEqual(o.refused, { key, blockedUntil: T + 1000 });
    });
  });
}

describe('throttle store: Redis only', { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
  test('keys expire by themselves: the expiry covers the window, then a block longer than it', async (t) => {
    const prefix = `latchkey-test:throttle:${randomBytes(6).toString('hex')}:`;
    const redis = await redisClient(t, prefix);
    const store = createRedisThrottleStore({ redis, prefix });
    const now = Date.now();
    granted(await reserveOne(store, 'expiry', limit(5), now));
    const ttl = await redis.pttl(`${prefix}expiry`);
    assert.ok(ttl > 0 && ttl <= WINDOW, `ttl ${ttl}`);
    await store.extendBlock('expiry', now + 2 * WINDOW, now);
    assert.ok(await redis.pttl(`${prefix}expiry`) > WINDOW);
    // Nothing to purge: purgeOld deletes nothing a later reservation would miss.
    await store.purgeOld(now + 3 * WINDOW, now + 3 * WINDOW);
    assert.equal(await store.blockedUntil('expiry'), now + 2 * WINDOW);
  });

  test('a Redis that cannot be reached refuses the attempt: the reservation fails, no attempt gets through', async (t) => {
    const redis = await createRedis(`redis://127.0.0.1:${await freePort()}`);
    t.after(() => redis.disconnect());
    const store = createRedisThrottleStore({ redis });
    await assert.rejects(reserveOne(store, 'down', limit(5), T));
    const throttle = createLoginThrottle({ store, clock: createTestClock(T), userFreeAttempts: 5, ipFreeAttempts: 50, maxDelaySeconds: 900 });
    await assert.rejects(throttle.reserve({ userKey: 'uid:1:1', ipKey: 'ip:192.0.2.1' }), (error) => !(error instanceof RateLimited));
  });
});
