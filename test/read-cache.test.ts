/**
 * Answers kept in memory (users/get, users/getall pages, API tokens behind /rest/api/2/myself) follow
 * writes made elsewhere: on SQLite by another process on the same file, at once; on PostgreSQL by
 * another node, once its change notification arrives. Two compositions on one database stand for
 * the two nodes; writes on this node are covered by every other suite, which now reads through the
 * same caches.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../src/audit/context.ts';
import { compose, type Composition } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { createTestClock } from '../src/lib/clock.ts';
import { createChangeLog, type ChangeFeed } from '../src/store/changes.ts';
import { createStore } from '../src/store/db.ts';
import { createReadCache } from '../src/store/read-cache.ts';
import { adminClient, testEnv } from './helpers/app.ts';
import { describeEachStore, postgresSchema, postgresStore, postgresUrl, type StoreKind } from './helpers/stores.ts';

async function twoNodes(t: TestContext, kind: StoreKind, extraEnv: Record<string, string> = {}): Promise<{ here: Composition; elsewhere: Composition }> {
  const env = testEnv(extraEnv);
  if (kind === 'sqlite') env.LATCHKEY_DATABASE_URL = join(mkdtempSync(join(tmpdir(), 'latchkey-nodes-')), 'latchkey.sqlite');
  const config = loadConfig(env);
  const clock = createTestClock(Date.now());
  if (kind === 'sqlite') {
    const here = await compose(config, { clock });
    const elsewhere = await compose(config, { clock });
    t.after(async () => { await elsewhere.close(); await here.close(); });
    return { here, elsewhere };
  }
  const shared = await postgresStore();
  const schema = await postgresSchema();
  const otherStore = await createStore(postgresUrl!, { schema, poolSize: 2 });
  t.after(() => otherStore.close());
  return { here: await compose(config, { clock, store: shared }), elsewhere: await compose(config, { clock, store: otherStore }) };
}

/**
 * SQLite: the next request must see the other process's write. A request from the network is
 * handled in a later turn of the event loop than the commit it follows (the feed polls SQLite once
 * per turn); an injected one may not be, hence the turn let pass. PostgreSQL: within 5 s (the
 * notification normally arrives within a millisecond). Each kept read is waited for on its own: one
 * that was read again for an earlier notification can show the write before the write's own
 * notification has arrived, while another, read after that earlier one, rightly still waits for it.
 */
async function seenOnThisNode(kind: StoreKind, check: () => Promise<boolean>, what: string): Promise<void> {
  if (kind === 'sqlite') {
    await new Promise((resolve) => setImmediate(resolve));
    return assert.ok(await check(), what);
  }
  for (let waited = 0; !(await check()); waited += 20) {
    if (waited > 5000) assert.fail(`not seen after 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const PASSWORD = 'violet-otter-harbour-42';

/** A feed that never sees a change (a silent cut looks like this), and a clock the test moves. */
function silentFeed(): ChangeFeed {
  return { mark: () => 0, unchangedSince: () => true };
}

test('a kept answer older than maxAgeMs is read again, even when the feed says nothing changed', async () => {
  const clock = createTestClock(1_000);
  let loads = 0;
  const cache = createReadCache<string>(silentFeed(), { tables: ['users'], maxEntries: 10, maxAgeMs: 500, clock });
  const load = async () => `value ${++loads}`;
  assert.equal(await cache.read('k', load), 'value 1');
  clock.advance(500);
  // Synchronous while young: the kept value itself, no promise.
  assert.equal(cache.read('k', load), 'value 1');
  clock.advance(1);
  assert.equal(await cache.read('k', load), 'value 2');
  assert.equal(loads, 2);
  // The age counts from the read that loaded it, not from its last use.
  clock.advance(400);
  assert.equal(cache.read('k', load), 'value 2');
  clock.advance(101);
  assert.equal(await cache.read('k', load), 'value 3');
});

test('the age of a kept answer counts from before its read, and the default bound is one second', async () => {
  const clock = createTestClock(0);
  const cache = createReadCache<string>(silentFeed(), { tables: ['users'], maxEntries: 10, clock });
  let loads = 0;
  // A read that takes 300 ms: the entry is as old as the moment the read began.
  assert.equal(await cache.read('k', async () => { clock.advance(300); return `value ${++loads}`; }), 'value 1');
  clock.advance(700);
  assert.equal(cache.read('k', async () => `value ${++loads}`), 'value 1');
  clock.advance(1);
  assert.equal(await cache.read('k', async () => `value ${++loads}`), 'value 2');
});

test('a clock set back does not keep an answer for as long as the step', async () => {
  const clock = createTestClock(10_000);
  const cache = createReadCache<string>(silentFeed(), { tables: ['users'], maxEntries: 10, clock });
  let loads = 0;
  const load = async () => `value ${++loads}`;
  assert.equal(await cache.read('k', load), 'value 1');
  assert.equal(cache.read('k', load), 'value 1');
  // The wall clock stepped back an hour: the entry's real age is unknown, so it is read again.
  clock.set(10_000 - 3_600_000);
  assert.equal(await cache.read('k', load), 'value 2');
  assert.equal(cache.read('k', load), 'value 2');
});

test('requests that find nothing kept share the read under way, unless a change came after it began or it began too long ago', async () => {
  const changes = createChangeLog();
  const clock = createTestClock(1_000);
  const cache = createReadCache<string>(changes, { tables: ['users'], maxEntries: 10, clock });
  // Each load waits until the test answers it: loads[i](error?) settles the i-th read.
  const loads: ((error?: Error) => void)[] = [];
  const load = () => new Promise<string>((resolve, reject) => {
    const n = loads.length + 1;
    loads.push((error) => (error ? reject(error) : resolve(`value ${n}`)));
  });

  const waiting = [cache.read('k', load), cache.read('k', load), cache.read('k', load)];
  assert.equal(loads.length, 1, 'three requests, one read');
  loads[0]!();
  assert.deepEqual(await Promise.all(waiting), ['value 1', 'value 1', 'value 1']);
  assert.equal(cache.read('k', load), 'value 1');

  // Past the age bound: one reload; a request after a change made meanwhile does not join it.
  clock.advance(1001);
  const before = cache.read('k', load);
  changes.changed(['users']);
  const after = cache.read('k', load);
  assert.equal(loads.length, 3);
  loads[1]!();
  loads[2]!();
  assert.deepEqual([await before, await after], ['value 2', 'value 3']);
  // The later read is the one kept.
  assert.equal(cache.read('k', load), 'value 3');

  // A read that has run for longer than the age bound is not joined, whatever the feed says.
  clock.advance(1001);
  const slow = cache.read('k', load);
  clock.advance(1001);
  const later = cache.read('k', load);
  assert.equal(loads.length, 5);
  loads[3]!();
  loads[4]!();
  assert.deepEqual([await slow, await later], ['value 4', 'value 5']);

  // A failed read fails those who joined it, and is not joined afterwards.
  clock.advance(1001);
  const failing = [cache.read('k', load), cache.read('k', load)];
  loads[5]!(new Error('connection lost'));
  for (const read of failing) await assert.rejects(read as Promise<string>, /connection lost/);
  const again = cache.read('k', load);
  assert.equal(loads.length, 7);
  loads[6]!();
  assert.equal(await again, 'value 7');
});

/** A new customer on `node` with one user of that username (first and last name as given). */
async function customerWithUser(node: Composition, username: string, firstName: string, lastName: string) {
  const customer = await node.services.customers.create({ email: `nodes-${randomBytes(4).toString('hex')}@example.test` });
  const user = await node.services.users.create(customer.customerId, {
    username, email: `${username}@example.test`, firstName, lastName, password: PASSWORD, customAttributes: {},
  }, SYSTEM);
  return { customer, user };
}

async function siteOf(t: TestContext, node: Composition, customer: { customerKey: string }) {
  const site = await node.buildSiteApp({ customerKey: customer.customerKey });
  t.after(() => site.close());
  return site;
}

describeEachStore('kept answers follow writes on other nodes', (kind) => {
  test('users/get and users/getall show an update and a delete made elsewhere', async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind);
    const identity = await here.buildIdentityApp();
    t.after(() => identity.close());
    const { customer } = await customerWithUser(here, 'ada', 'Ada', 'Lovelace');
    const admin = adminClient(identity, customer, here.clock as ReturnType<typeof createTestClock>);
    const customerKey = customer.customerKey;
    const get = async () => (await admin.post('/admin/users/get', { customerKey, username: 'ada' })).json();
    const list = async () => (await admin.post('/admin/users/getall', { customerKey, batchSize: 10, batchNo: 1 })).json();
    // Asked twice: the second answer comes from memory.
    for (let i = 0; i < 2; i++) {
      assert.equal((await get()).users[0].fname, 'Ada');
      assert.equal((await list()).users[0].fname, 'Ada');
    }

    await elsewhere.services.users.update(customer.customerId, { username: 'ada', firstName: 'Augusta', customAttributes: {} }, SYSTEM);
    await seenOnThisNode(kind, async () => (await get()).users[0].fname === 'Augusta', 'users/get after an update elsewhere');
    await seenOnThisNode(kind, async () => (await list()).users[0].fname === 'Augusta', 'users/getall after an update elsewhere');

    await elsewhere.services.groups.upsert(customer.customerId, [{ name: 'analysts', isDefault: false, attributes: {} }], SYSTEM);
    await elsewhere.services.groups.updateMembers(customer.customerId, 'analysts', [{ primaryEmail: 'ada@example.test', remove: false }], SYSTEM);
    await seenOnThisNode(kind, async () => (await get()).users[0].groups.includes('analysts'), 'users/get after a membership added elsewhere');
    await seenOnThisNode(kind, async () => (await list()).users[0].groups.includes('analysts'), 'users/getall after a membership added elsewhere');

    await elsewhere.services.users.remove(customer.customerId, 'ada', SYSTEM);
    await seenOnThisNode(kind, async () => (await admin.post('/admin/users/get', { customerKey, username: 'ada' })).statusCode === 404, 'users/get after a delete elsewhere');
    await seenOnThisNode(kind, async () => (await list()).users.length === 0, 'users/getall after a delete elsewhere');
  });

  test('an API token revoked, or whose owner is disabled, elsewhere stops working here', async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind);
    const { customer, user } = await customerWithUser(here, 'grace', 'Grace', 'Hopper');
    const site = await siteOf(t, here, customer);
    const tokens = here.services.apiTokens;
    const myself = (secret: string) => site.inject({ method: 'GET', url: '/rest/api/2/myself', headers: { authorization: `Bearer ${secret}` } });

    const revoked = await tokens.create(customer.customerId, { userId: user.id, name: 'to revoke', type: 'bearer', expiresInDays: 30 }, SYSTEM);
    const kept = await tokens.create(customer.customerId, { userId: user.id, name: 'to keep', type: 'bearer', expiresInDays: 30 }, SYSTEM);
    for (let i = 0; i < 2; i++) {
      assert.equal((await myself(revoked.secret)).statusCode, 200);
      assert.equal((await myself(kept.secret)).statusCode, 200);
    }

    await elsewhere.services.apiTokens.revoke(customer.customerId, revoked.id, SYSTEM);
    await seenOnThisNode(kind, async () => (await myself(revoked.secret)).statusCode === 401, 'a token revoked elsewhere');
    assert.equal((await myself(kept.secret)).statusCode, 200);

    await elsewhere.services.users.update(customer.customerId, { username: 'grace', firstName: 'Amazing', customAttributes: {} }, SYSTEM);
    await seenOnThisNode(kind, async () => (await myself(kept.secret)).json().displayName === 'Amazing Hopper', 'myself after an update elsewhere');

    await elsewhere.services.users.setDisabled(customer.customerId, 'grace', true, SYSTEM);
    await seenOnThisNode(kind, async () => (await myself(kept.secret)).statusCode === 401, "a token whose owner was disabled elsewhere");
  });

  test("a JWT of a user disabled elsewhere stops working here", async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind);
    const { customer } = await customerWithUser(here, 'alan', 'Alan', 'Turing');
    const site = await siteOf(t, here, customer);
    const login = await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'alan', password: PASSWORD } });
    assert.equal(login.statusCode, 200, login.body);
    const jwt = login.json().jwt_token as string;
    const posts = () => site.inject({ method: 'GET', url: '/cms-json/cms/v2/posts', headers: { authorization: `Bearer ${jwt}` } });
    for (let i = 0; i < 2; i++) assert.equal((await posts()).statusCode, 200);

    await elsewhere.services.users.setDisabled(customer.customerId, 'alan', true, SYSTEM);
    // The spec answers a revoked JWT with 400 INVALID_TOKEN.
    await seenOnThisNode(kind, async () => (await posts()).statusCode === 400, 'a JWT whose user was disabled elsewhere');
  });

  test('an API key revoked elsewhere stops working here', async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind);
    const { customer } = await customerWithUser(here, 'ada', 'Ada', 'Byron');
    const site = await siteOf(t, here, customer);
    const created = await here.services.siteApiKeys.create(customer.customerId, { login: 'ada' }, SYSTEM);
    const posts = () => site.inject({ method: 'GET', url: '/cms-json/cms/v2/posts', headers: { authorization: `Bearer ${created.apiKey}` } });
    for (let i = 0; i < 2; i++) assert.equal((await posts()).statusCode, 200);

    await elsewhere.services.siteApiKeys.revoke(customer.customerId, created.id, SYSTEM);
    await seenOnThisNode(kind, async () => (await posts()).statusCode === 401, 'an API key revoked elsewhere');
  });

  test('with LATCHKEY_READ_CACHE=false every read goes to the database, and answers are the same', async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind, { LATCHKEY_READ_CACHE: 'false' });
    const identity = await here.buildIdentityApp();
    t.after(() => identity.close());
    const { customer } = await customerWithUser(here, 'ada', 'Ada', 'Lovelace');
    const admin = adminClient(identity, customer, here.clock as ReturnType<typeof createTestClock>);
    const get = async () => (await admin.post('/admin/users/get', { customerKey: customer.customerKey, username: 'ada' })).json();
    assert.equal((await get()).users[0].fname, 'Ada');
    await elsewhere.services.users.update(customer.customerId, { username: 'ada', firstName: 'Augusta', customAttributes: {} }, SYSTEM);
    // Nothing kept: even on PostgreSQL the very next request reads the update, no notification needed.
    assert.equal((await get()).users[0].fname, 'Augusta');
  });
});
