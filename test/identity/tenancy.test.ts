/**
 * Tenancy through every users and groups route: customer B never sees or changes customer A's
 * users, groups or memberships, and a body naming A under B's signature is refused outright.
 * A's whole state is read back afterwards and must be unchanged.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { build, type AdminClient, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { json, text } from '../helpers/http.ts';

// Open the shared PostgreSQL schema outside any test: postgresStore() registers its closing
// `after` hook on whatever test first calls it, which would close the store after that test.
if (postgresUrl) await postgresStore();

const PASSWORD = 'correct horse battery';
const DENIED = 'API Request denied: Incorrect Authorization header.';

interface Tenants {
  app: TestApp;
  a: { ck: number; customerId: number; admin: AdminClient };
  b: { ck: number; customerId: number; admin: AdminClient };
}

/** A with two users, a group with a member and a moved default; B empty. */
async function setup(t: TestContext, kind: StoreKind): Promise<Tenants> {
  const app = await build(t, kind);
  const other = await app.newCustomer();
  const a = { ck: Number(app.customer.customerKey), customerId: app.customer.customerId, admin: app.admin };
  const b = { ck: Number(other.customer.customerKey), customerId: other.customer.customerId, admin: other.admin };
  json(await a.admin.post('/admin/groups/update', { customerKey: a.ck, groups: [{ groupName: 'Team', isDefault: 'true', groupAttribute1: 'a-only' }] }), 200);
  json(await a.admin.post('/admin/users/create', {
    customerKey: a.ck, username: 'alice', email: 'alice@example.com', firstName: 'Alice', lastName: 'A', password: PASSWORD, customAttribute1: 'secret-ish',
  }), 200);
  json(await a.admin.post('/admin/users/create', { customerKey: a.ck, username: 'bob', email: 'bob@example.com', firstName: 'Bob', lastName: 'B' }), 200);
  return { app, a, b };
}

/** Everything A can read about itself, through A's own client. */
async function snapshot({ app, a }: Tenants) {
  const post = async (path: string, body: Record<string, unknown>, query?: string) => json(await a.admin.post(path, { customerKey: a.ck, ...body }, { query }), 200);
  const users = app.composition.services.users;
  return {
    users: await post('/admin/users/getall', { batchSize: 500, batchNo: 1 }, 'includePwdExpDttm=true'),
    alice: await post('/admin/users/get', { username: 'alice' }),
    bob: await post('/admin/users/get', { username: 'bob@example.com' }),
    count: json(await a.admin.get('/admin/users/stats/count'), 200),
    groups: await post('/admin/groups/getall', { batchSize: 1000, batchNo: 1 }),
    members: await post('/admin/groups/members', { batchSize: 1000, batchNo: 1 }),
    aliceSignsIn: (await users.verifyCredentials(a.customerId, 'alice', PASSWORD))?.username,
    aliceEnabled: (await users.findByLogin(a.customerId, 'alice'))?.isDisabled === false,
  };
}

describeEachStore('tenancy of users and groups', (kind) => {
  test('B cannot see, change or use any of A\'s users or groups through any route', async (t) => {
    const tenants = await setup(t, kind);
    const { a, b } = tenants;
    const before = await snapshot(tenants);
    assert.equal(before.users.fetchedCount, 2);
    assert.equal(before.aliceSignsIn, 'alice');
    const post = (path: string, body: Record<string, unknown>) => b.admin.post(path, { customerKey: b.ck, ...body });

    for (const login of ['alice', 'ALICE', 'alice@example.com', 'bob']) {
      assert.deepEqual(json(await post('/admin/users/get', { username: login }), 404), { username: login, status: 'FAILED', message: 'Invalid username or email.' });
      assert.deepEqual(json(await post('/admin/users/search', { username: login }), 200), { status: 'USER_NOT_FOUND', message: 'Invalid username or email.' });
      assert.deepEqual(json(await post('/admin/users/update', { username: login, firstName: 'Mallory', password: 'pwned by tenant b' }), 404),
        { status: 'ERROR', code: '404', message: 'Invalid username or email.' });
      assert.equal(text(await post('/admin/users/delete', { username: login }), 403), 'You are not authorized to perform this operation.');
      for (const action of ['disable', 'enable']) assert.equal(text(await post(`/admin/users/${action}`, { username: login }), 403), 'Invalid username or email.');
      assert.deepEqual(json(await post('/admin/users/change-password', { customerKey: String(b.ck), username: login, oldPassword: PASSWORD, password: 'pwned by tenant b' }), 400),
        { customerId: b.customerId, status: 'ERROR', message: 'Invalid username or email.' });
    }

    assert.deepEqual(json(await b.admin.get('/admin/users/stats/count'), 200), { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: 0 } });
    const list = json(await post('/admin/users/getall', { batchSize: 500, batchNo: 1 }), 200);
    assert.deepEqual([list.users, list.fetchedCount, list.nextBatch], [[], 0, -1]);
    assert.deepEqual(json(await post('/admin/groups/getall', { batchSize: 1000, batchNo: 1 }), 200), {
      customerId: b.customerId, status: 'SUCCESS', message: 'Successfully fetched groups.', fetchedCount: 1, nextBatch: -1,
      groups: [{ groupName: 'DEFAULT', customerId: b.customerId, isDefault: true, isCustomerDefault: true, isUserInviteEnabled: false, numOfUsersInGroup: 0 }],
    });
    assert.deepEqual(json(await post('/admin/groups/members', { batchSize: 1000, batchNo: 1 }), 200),
      { customerId: b.customerId, status: 'SUCCESS', message: 'Successfully fetched group members.', groupDetails: [], fetchedCount: 0, nextBatch: -1 });

    // A's group name and A's users' e-mails mean nothing in B.
    for (const action of [{}, { action: 'remove' }]) {
      assert.deepEqual(json(await post('/admin/groups/members/update', { groupName: 'Team', users: [{ primaryEmail: 'alice@example.com', ...action }] }), 404),
        { status: 'ERROR', code: '404', message: 'group Team does not exist' });
      assert.deepEqual(json(await post('/admin/groups/members/update', { groupName: 'DEFAULT', users: [{ primaryEmail: 'alice@example.com', ...action }] }), 400),
        { status: 'ERROR', code: '400', message: 'users[0].primaryEmail does not belong to any user' });
    }
    assert.deepEqual(json(await post('/admin/users/create', { username: 'carol', email: 'carol@example.com', firstName: 'C', lastName: 'C', groups: [{ name: 'Team' }] }), 400),
      { status: 'ERROR', code: '400', message: 'groups[0].name names a group that does not exist: Team' });

    // B's upsert of the same group name creates B's own group and moves only B's default.
    json(await post('/admin/groups/update', { groups: [{ groupName: 'Team', isDefault: 'true', groupAttribute1: 'b-only', groupAttribute2: 'b' }] }), 200);
    json(await post('/admin/groups/update', { groups: [{ groupName: 'DEFAULT', isDefault: 'true' }] }), 200);
    const bGroups = json(await post('/admin/groups/getall', { batchSize: 1000, batchNo: 1 }), 200).groups;
    assert.deepEqual(bGroups.map((g: any) => [g.groupName, g.isDefault, g.groupAttribute1, g.customerId]), [['DEFAULT', true, undefined, b.customerId], ['Team', false, 'b-only', b.customerId]]);

    assert.deepEqual(await snapshot(tenants), before);
    assert.equal(a.customerId !== b.customerId, true);
  });

  test('B may use the same usernames, e-mails and group names as A without touching A', async (t) => {
    const tenants = await setup(t, kind);
    const { a, b } = tenants;
    const before = await snapshot(tenants);
    const post = (path: string, body: Record<string, unknown>) => b.admin.post(path, { customerKey: b.ck, ...body });
    json(await post('/admin/groups/update', { groups: [{ groupName: 'Team', isDefault: 'false' }] }), 200);
    const created = json(await post('/admin/users/create', { username: 'ALICE', email: 'Alice@Example.com', firstName: 'Other', lastName: 'Alice', groups: [{ name: 'Team' }] }), 200);
    json(await post('/admin/users/update', { username: 'alice', firstName: 'Still other', customAttribute1: 'b' }), 200);
    json(await post('/admin/users/disable', { username: 'alice@example.com' }), 200);
    json(await post('/admin/groups/members/update', { groupName: 'Team', users: [{ primaryEmail: 'alice@example.com', action: 'remove' }] }), 200);
    json(await post('/admin/groups/members/update', { groupName: 'Team', users: [{ primaryEmail: 'alice@example.com' }] }), 200);
    const got = json(await post('/admin/users/get', { username: 'alice' }), 200);
    assert.equal(got.userId, created.userId);
    assert.notEqual(got.userId, before.alice.userId);
    assert.deepEqual([got.users[0].customerId, got.users[0].fname, got.users[0].groups], [b.customerId, 'Still other', ['Team']]);
    json(await post('/admin/users/delete', { username: 'alice' }), 200);
    assert.deepEqual(await snapshot(tenants), before);
    assert.ok(a.ck !== b.ck);
  });

  test('a body naming A under B\'s signature is refused with the route\'s unauthorised body', async (t) => {
    const tenants = await setup(t, kind);
    const { a, b } = tenants;
    const before = await snapshot(tenants);
    const standard = { status: 'ERROR', code: '401', message: DENIED };
    const routes: [string, Record<string, unknown>][] = [
      ['/admin/users/create', { username: 'mallory', email: 'mallory@example.com', firstName: 'M', lastName: 'M' }],
      ['/admin/users/update', { username: 'alice', firstName: 'Mallory' }],
      ['/admin/users/getall', { batchSize: 10, batchNo: 1 }],
      ['/admin/users/get', { username: 'alice' }],
      ['/admin/users/search', { username: 'alice' }],
      ['/admin/users/delete', { username: 'bob' }],
      ['/admin/groups/getall', { batchSize: 10, batchNo: 1 }],
      ['/admin/groups/update', { groups: [{ groupName: 'DEFAULT', isDefault: 'true' }] }],
      ['/admin/groups/members/update', { groupName: 'Team', users: [{ primaryEmail: 'bob@example.com' }] }],
      ['/admin/groups/members', { batchSize: 10, batchNo: 1 }],
    ];
    for (const customerKey of [a.ck, String(a.ck)]) {
      for (const [path, body] of routes) {
        assert.deepEqual(json(await b.admin.post(path, { ...body, customerKey }), 401), standard, path);
      }
      for (const action of ['disable', 'enable']) {
        assert.equal(text(await b.admin.post(`/admin/users/${action}`, { customerKey, username: 'alice' }), 400), `API Authorization: ${DENIED}`);
      }
      const change = await b.admin.post('/admin/users/change-password', { customerKey, username: 'alice', oldPassword: PASSWORD, password: 'pwned by tenant b' });
      assert.deepEqual(json(change, 401), { status: 'error', code: '401', message: DENIED });
    }
    // A's Customer-Key header with B's signature: the count (no body) is refused too.
    const forged = { 'customer-key': String(a.ck) };
    assert.deepEqual(json(await b.admin.get('/admin/users/stats/count', { headers: forged }), 401), standard);
    assert.deepEqual(json(await b.admin.post('/admin/users/get', { customerKey: a.ck, username: 'alice' }, { headers: forged }), 401), standard);
    assert.equal(json(await b.admin.get('/admin/users/stats/count'), 200).data.count, 0);
    assert.deepEqual(await snapshot(tenants), before);
  });
});
