/**
 * E-mail bombing through magic-link generate: a caller holding the customer's API key (or a
 * bearer token of its OAuth client) cannot flood one user's mailbox. Generates are capped per user
 * (whatever the application) by an atomic reservation in the throttle store (the database, or Redis
 * when LATCHKEY_REDIS_URL is set), so concurrent calls on any node stay within the cap; the cap ends
 * after its hour.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { SYSTEM } from '../../src/audit/context.ts';
import { GENERATE_CAP_PER_USER, GENERATE_CAP_WINDOW_MS } from '../../src/identity/magic-links/service.ts';
import { describeEachStore, type StoreKind } from '../helpers/stores.ts';
import { concurrently, RETURN_URL, setup } from './helpers.ts';

const CAPPED = { status: 'ERROR', code: '429', message: 'Too many magic links for this user: try again later.' };
const SENT = "The magic link has been sent to the user's registered e-mail address.";

const redisUrl = process.env.LATCHKEY_TEST_REDIS_URL || undefined;
/** The Redis key of a user's cap, as the server names it. */
const capKey = (customerId: number, userId: number) => `latchkey:throttle:magic-generate:${customerId}:${userId}`;

describeEachStore('abuse: e-mail bombing through magic-link generate', (kind) => bombingSuite(kind));
if (redisUrl) {
  describe('abuse: e-mail bombing through magic-link generate [sqlite, counts in Redis]', () => bombingSuite('sqlite', redisUrl));
} else {
  test('abuse: e-mail bombing with counts in Redis', { skip: 'LATCHKEY_TEST_REDIS_URL is not set' }, () => {});
}

function bombingSuite(kind: StoreKind, redisUrl?: string): void {
  const serverEnv: Record<string, string> = redisUrl ? { LATCHKEY_REDIS_URL: redisUrl } : {};
  /** With Redis: the key starts empty (ids repeat between in-memory databases), and is closed with the test. */
  const redisFor = async (t: import('node:test').TestContext, customerId: number, userIds: number[]): Promise<Redis | undefined> => {
    if (!redisUrl) return undefined;
    const redis = new Redis(redisUrl);
    t.after(() => redis.quit());
    await redis.del(...userIds.map((id) => capKey(customerId, id)));
    return redis;
  };

  test('one user gets at most the cap of links per hour; the next is 429 and queues no mail; the cap ends after the hour', async (t) => {
    const env = await setup(t, kind, serverEnv);
    const user = await env.addUser('bombed');
    const other = await env.addUser('bystander');
    const redis = await redisFor(t, env.customer.customerId, [user.id, other.id]);
    const apps = [await env.magicApp(), await env.magicApp()];
    const generate = (username: string, i: number) =>
      env.admin.post('/admin/magiclink/generate', { username, applicationUuid: apps[i % 2], redirectUri: RETURN_URL });
    const mails = async (to: string) => (await env.composition.store.db.selectFrom('mail_outbox').select('id').where('to_address', '=', to).execute()).length;

    for (let i = 0; i < GENERATE_CAP_PER_USER; i++) {
      const res = await generate(user.username, i);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().message, SENT);
    }
    // By username or by e-mail, through either application: the same user, the same cap.
    for (const [login, i] of [[user.username, 0], [user.email, 1]] as const) {
      const refused = await generate(login, i);
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json(), CAPPED);
      assert.match(String(refused.headers['retry-after']), /^[1-9][0-9]*$/);
      assert.ok(Number(refused.headers['retry-after']) <= GENERATE_CAP_WINDOW_MS / 1000);
    }
    assert.equal(await mails(user.email), GENERATE_CAP_PER_USER);
    if (redis) {
      // Counted in Redis, with an expiry of its own; nothing in the database table.
      assert.equal(await redis.hget(capKey(env.customer.customerId, user.id), 'c'), String(GENERATE_CAP_PER_USER));
      assert.ok(await redis.pttl(capKey(env.customer.customerId, user.id)) > 0);
      assert.deepEqual(await env.composition.store.db.selectFrom('site_login_failures').select('key').execute(), []);
    }
    // Another user is not affected.
    assert.equal((await generate(other.username, 0)).statusCode, 200);

    env.clock.advance(GENERATE_CAP_WINDOW_MS + 1_000);
    assert.equal((await generate(user.username, 0)).statusCode, 200, 'the cap expires: no lasting lockout');
    assert.equal(await mails(user.email), GENERATE_CAP_PER_USER + 1);
  });

  test('the cap holds through the login throttle\'s purge of idle keys (it shares the table)', async (t) => {
    const env = await setup(t, kind, serverEnv);
    const user = await env.addUser('patient');
    await redisFor(t, env.customer.customerId, [user.id]);
    const app = await env.magicApp();
    const generate = () => env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: app, redirectUri: RETURN_URL });
    for (let i = 0; i < GENERATE_CAP_PER_USER - 1; i++) assert.equal((await generate()).statusCode, 200);
    // 20 idle minutes (longer than the login throttle's window), then a failed login makes that throttle sweep old keys.
    env.clock.advance(20 * 60_000);
    const site = await env.site();
    const failed = await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'nobody', password: 'guess' } });
    assert.equal(failed.statusCode, 400, failed.body);
    assert.equal((await generate()).statusCode, 200, 'the last place under the cap');
    const refused = await generate();
    assert.equal(refused.statusCode, 429, 'the sweep did not forget the count: the cap still holds within its hour');
  });

  test('30 concurrent generates for one user: at most the cap succeed, the rest are 429, never a 5xx', async (t) => {
    const env = await setup(t, kind, serverEnv);
    const user = await env.addUser('raced');
    await redisFor(t, env.customer.customerId, [user.id]);
    const apps = await concurrently(6, () => env.magicApp());
    const results = await concurrently(30, (i) =>
      env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: apps[i % apps.length], redirectUri: RETURN_URL }));
    const statuses = results.map((r) => r.statusCode);
    assert.ok(statuses.every((s) => s === 200 || s === 429), statuses.join(','));
    assert.equal(statuses.filter((s) => s === 200).length, GENERATE_CAP_PER_USER);
    for (const r of results.filter((r) => r.statusCode === 429)) assert.deepEqual(r.json(), CAPPED);
    const rows = await env.composition.store.db.selectFrom('mail_outbox').select('id').where('to_address', '=', user.email).execute();
    assert.equal(rows.length, GENERATE_CAP_PER_USER);
  });

  test('a refused generate (no policy, unknown application) does not use up the cap', async (t) => {
    const env = await setup(t, kind, serverEnv);
    const user = await env.addUser('careful');
    await redisFor(t, env.customer.customerId, [user.id]);
    const app = await env.magicApp();
    const { application: bare } = await env.composition.services.applications.create(env.customer.customerId, { name: 'Bare', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    for (let i = 0; i < GENERATE_CAP_PER_USER + 3; i++) {
      const res = await env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: bare.uuid, redirectUri: RETURN_URL });
      assert.equal(res.statusCode, 400, res.body);
    }
    for (let i = 0; i < GENERATE_CAP_PER_USER; i++) {
      const res = await env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: app, redirectUri: RETURN_URL });
      assert.equal(res.statusCode, 200, res.body);
    }
  });
}
