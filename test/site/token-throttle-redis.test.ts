/**
 * Issue 17 part 1, with LATCHKEY_REDIS_URL: two compositions sharing one Redis (and one database)
 * stand for two nodes behind a load balancer. An attacker spreading password guesses over both nodes'
 * token endpoints, and over the API-token routes' password form, gets no more checks than the budget,
 * and the counts are in Redis (expiring by themselves), not in the database table. A Redis that
 * cannot be reached refuses the login before the password is checked (fails closed).
 * Skipped, with the reason, without LATCHKEY_TEST_REDIS_URL.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { RateLimited } from '../../src/lib/errors.ts';
import { createTokenService } from '../../src/site/token/service.ts';
import { createLoginThrottle, loginAttempt } from '../../src/store/throttles/login.ts';
import { createRedis } from '../../src/store/redis.ts';
import { createRedisThrottleStore } from '../../src/store/throttles/redis.ts';
import type { Store } from '../../src/store/db.ts';
import { freePort } from '../helpers/ports.ts';
import { openTestStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { PASSWORD, siteError, TOKEN_PATH } from './helpers.ts';

if (postgresUrl) await postgresStore();
const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;

const BUDGET = 5;
const GUESSES = 30;
const PREFIX = 'latchkey:throttle:';
const INVALID = siteError(400, 'INVALID_CREDENTIALS', 'Invalid username or password.');
const THROTTLED = siteError(429, 'TOO_MANY_REQUESTS', 'Too many failed logins: try again later.');

interface Node { composition: Composition; site: FastifyInstance; checks(): number }
interface TwoNodes { nodes: [Node, Node]; store: Store; redis: Redis; customerId: number; userId: number; userKey: string }

/** A client address of its own per call: the per-address budgets (and the rate limits) never interfere. */
const address = () => `10.${[...randomBytes(3)].join('.')}`;

/** Two nodes (compositions on one store and one Redis) serving the site of one customer with one user. */
async function twoNodes(t: TestContext, kind: StoreKind): Promise<TwoNodes> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const env = {
    LATCHKEY_DATABASE_URL: ':memory:',
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_LOG_LEVEL: 'silent',
    LATCHKEY_REDIS_URL: redisUrl!,
  };
  const compositions: Composition[] = [];
  const sites: FastifyInstance[] = [];
  t.after(async () => {
    for (const site of sites) await site.close();
    for (const composition of compositions) await composition.close();
    if (owned) await store.close();
  });
  for (let i = 0; i < 2; i++) {
    compositions.push(await compose(loadConfig({ ...env, LATCHKEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'latchkey-node-')) }), { clock, store }));
  }
  const { services } = compositions[0]!;
  const customer = await services.customers.create({ email: `throttle-${randomBytes(4).toString('hex')}@example.test` });
  const user = await services.users.create(customer.customerId, {
    username: 'alice', email: 'alice@example.test', firstName: 'Site', lastName: 'User', password: PASSWORD, customAttributes: {},
  }, SYSTEM);
  const nodes = await Promise.all(compositions.map(async (composition, i) => {
    const site = await composition.buildSiteApp({ customerKey: customer.customerKey });
    sites[i] = site;
    const spy = t.mock.method(composition.services.users, 'verifyCredentials');
    return { composition, site, checks: () => spy.mock.callCount() };
  }));
  const redis = new Redis(redisUrl!);
  t.after(() => redis.disconnect());
  const userKey = loginAttempt(customer.customerId, 'alice', user.id, '').userKey;
  // Ids start again in every test database, and an earlier run's counts live in Redis for their window.
  await redis.del(PREFIX + userKey);
  return { nodes: nodes as [Node, Node], store, redis, customerId: customer.customerId, userId: user.id, userKey };
}

const login = (node: Node, password: string, from = address()): Promise<LightMyRequestResponse> =>
  node.site.inject({ method: 'POST', url: TOKEN_PATH, payload: { username: 'alice', password }, remoteAddress: from });

const basic = (username: string, secret: string) => `Basic ${Buffer.from(`${username}:${secret}`).toString('base64')}`;

async function assertCountsInRedisOnly(c: TwoNodes, count: number): Promise<void> {
  assert.equal(await c.redis.hget(PREFIX + c.userKey, 'c'), String(count));
  const ttl = await c.redis.pttl(PREFIX + c.userKey);
  assert.ok(ttl > 0, `the key expires by itself (pttl ${ttl})`);
  const row = await c.store.db.selectFrom('site_login_failures').select('key').where('key', '=', c.userKey).executeTakeFirst();
  assert.equal(row, undefined, 'nothing counted in the database table');
}

const kinds: StoreKind[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite'];

for (const kind of kinds) {
  describe(`site login throttle shared through Redis by two nodes [${kind}]`, { skip: redisUrl ? false : 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {
    test(`${GUESSES} concurrent wrong passwords spread over two nodes and as many addresses: ${BUDGET} checked in all, the rest 429`, async (t) => {
      const c = await twoNodes(t, kind);
      const results = await Promise.all(Array.from({ length: GUESSES }, (_, i) => login(c.nodes[i % 2]!, 'wrong-password')));
      const invalid = results.filter((r) => r.statusCode === 400);
      const throttled = results.filter((r) => r.statusCode === 429);
      assert.equal(invalid.length, BUDGET, results.map((r) => r.statusCode).join(','));
      assert.equal(throttled.length, GUESSES - BUDGET);
      for (const r of invalid) assert.deepEqual(r.json(), INVALID);
      for (const r of throttled) {
        assert.deepEqual(r.json(), THROTTLED);
        assert.match(String(r.headers['retry-after']), /^[1-9][0-9]*$/);
      }
      assert.equal(c.nodes[0].checks() + c.nodes[1].checks(), BUDGET, 'password checks on both nodes together');
      // The right password is refused on either node while the user is blocked, and costs no check.
      for (const node of c.nodes) assert.equal((await login(node, PASSWORD)).statusCode, 429);
      assert.equal(c.nodes[0].checks() + c.nodes[1].checks(), BUDGET);
      await assertCountsInRedisOnly(c, BUDGET);
    });

    test('wrong passwords on one node\'s API-token routes count against the other node\'s token endpoint', async (t) => {
      const c = await twoNodes(t, kind);
      for (let i = 0; i < BUDGET - 1; i++) {
        const res = await c.nodes[0].site.inject({ method: 'GET', url: '/rest/api/2/tokens', headers: { authorization: basic('alice', 'wrong-password') }, remoteAddress: address() });
        assert.equal(res.statusCode, 401, res.body);
      }
      // The budget's last attempt, on the other node; then the right password is refused there.
      assert.deepEqual((await login(c.nodes[1], 'wrong-password')).json(), INVALID);
      const refused = await login(c.nodes[1], PASSWORD);
      assert.equal(refused.statusCode, 429);
      assert.deepEqual(refused.json(), THROTTLED);
      await assertCountsInRedisOnly(c, BUDGET);
    });
  });
}

describe('site login throttle in Redis: Redis unreachable', () => {
  test('the login is refused with the Redis error before the password is checked (fails closed)', async (t) => {
    const redis = await createRedis(`redis://127.0.0.1:${await freePort()}`);
    t.after(() => redis.disconnect());
    const throttle = createLoginThrottle({
      store: createRedisThrottleStore({ redis }), clock: createTestClock(Date.now()), userFreeAttempts: 5, ipFreeAttempts: 50, maxDelaySeconds: 900,
    });
    let checks = 0;
    const user = { id: 1, username: 'alice', isDisabled: false, markForDeletion: false, credentialsVersion: 1 };
    const tokens = createTokenService({
      customerId: 1,
      users: {
        findByLogin: async () => user as never,
        verifyCredentials: async () => { checks++; return user as never; },
      },
      issuer: { issue: async () => { throw new Error('no token may be issued'); } } as never,
      throttle,
    });
    await assert.rejects(tokens.login({ username: 'alice', password: PASSWORD, clientAddress: '192.0.2.1' }), (error) => !(error instanceof RateLimited));
    assert.equal(checks, 0, 'no password check without a reservation');
  });
});
