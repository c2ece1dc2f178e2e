/**
 * Concurrent admin requests against one customer: no duplicated or lost writes. On PostgreSQL the
 * requests really overlap (a pool of connections); on SQLite they interleave between statements.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

// Open the shared PostgreSQL schema outside any test: postgresStore() registers its closing
// `after` hook on whatever test first calls it, which would close the store after that test.
if (postgresUrl) await postgresStore();

const N = 10;
const PASSWORD = 'correct horse battery';

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

function json(res: LightMyRequestResponse, status: number): any {
  assert.equal(res.statusCode, status, res.body);
  return res.json();
}

const statuses = (responses: LightMyRequestResponse[]) => responses.map((r) => r.statusCode).sort((x, y) => x - y);
const times = <T>(n: number, make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));

async function allUsers(app: App): Promise<any[]> {
  return json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 500, batchNo: 1 }), 200).users;
}

async function allGroups(app: App): Promise<any[]> {
  return json(await app.admin.post('/admin/groups/getall', { customerKey: app.ck, batchSize: 1000, batchNo: 1 }), 200).groups;
}

async function allMembers(app: App): Promise<any[]> {
  return json(await app.admin.post('/admin/groups/members', { customerKey: app.ck, batchSize: 1000, batchNo: 1 }), 200).groupDetails;
}

async function count(app: App): Promise<number> {
  return json(await app.admin.get('/admin/users/stats/count'), 200).data.count;
}

describeEachStore('concurrent users and groups requests', (kind) => {
  test('concurrent creates of one username: exactly one succeeds, the rest are 409, one row', async (t) => {
    const app = await setup(t, kind);
    const responses = await times(N, (i) => app.admin.post('/admin/users/create', {
      customerKey: app.ck, username: i % 2 ? 'Zed' : 'zed', email: `zed${i}@example.com`, firstName: 'Z', lastName: 'Z',
    }));
    assert.deepEqual(statuses(responses), [200, ...Array(N - 1).fill(409)]);
    for (const res of responses.filter((r) => r.statusCode === 409)) {
      assert.deepEqual(res.json(), { status: 'ERROR', code: '409', message: 'a user with this username already exists' });
    }
    const users = await allUsers(app);
    assert.deepEqual(users.map((u) => u.username.toLowerCase()), ['zed']);
    assert.equal(await count(app), 1);
    assert.deepEqual((await allMembers(app)).length, 1);
  });

  test('concurrent creates of different users: none lost, counted once each', async (t) => {
    const app = await setup(t, kind);
    const responses = await times(N, (i) => app.admin.post('/admin/users/create', {
      customerKey: app.ck, username: `user${i}`, email: `user${i}@example.com`, firstName: 'U', lastName: 'U',
    }));
    assert.deepEqual(statuses(responses), Array(N).fill(200));
    const users = await allUsers(app);
    assert.deepEqual(users.map((u) => u.username).sort(), Array.from({ length: N }, (_, i) => `user${i}`).sort());
    assert.equal(await count(app), N);
    // Paging by bucket counts stays exact after concurrent inserts.
    const second = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 3, batchNo: 2 }), 200);
    assert.deepEqual(second.users.map((u: any) => u.username), users.slice(3, 6).map((u) => u.username));
  });

  test('concurrent deletes of one user: one succeeds, the others are refused, the count stays right', async (t) => {
    const app = await setup(t, kind);
    for (const name of ['keep', 'gone']) {
      json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: name, email: `${name}@example.com`, firstName: 'D', lastName: 'D' }), 200);
    }
    const responses = await times(N, () => app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 'gone' }));
    assert.deepEqual(statuses(responses), [200, ...Array(N - 1).fill(403)]);
    assert.equal(await count(app), 1);
    const after = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 1, batchNo: 1 }), 200);
    assert.deepEqual([after.users.map((u: any) => u.username), after.nextBatch], [['keep'], -1]);
  });

  test('concurrent groups/update creating the same new group: all succeed, one group', async (t) => {
    const app = await setup(t, kind);
    const responses = await times(N, (i) => app.admin.post('/admin/groups/update', {
      customerKey: app.ck, groups: [{ groupName: i % 2 ? 'NEW' : 'New', isDefault: 'false', [`groupAttribute${i + 1}`]: `v${i}` }],
    }));
    assert.deepEqual(statuses(responses), Array(N).fill(200));
    const groups = await allGroups(app);
    assert.deepEqual(groups.map((g) => g.groupName.toLowerCase()), ['default', 'new']);
    // Every request's attribute was merged: none lost.
    for (let i = 0; i < N; i++) assert.equal(groups[1][`groupAttribute${i + 1}`], `v${i}`);
  });

  test('concurrent members/update adds: no duplicate mapping, none lost', async (t) => {
    const app = await setup(t, kind);
    json(await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups: [{ groupName: 'Crew', isDefault: 'false' }] }), 200);
    for (let i = 0; i < 3; i++) {
      json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: `m${i}`, email: `m${i}@example.com`, firstName: 'M', lastName: 'M' }), 200);
    }
    const responses = await times(N, (i) => app.admin.post('/admin/groups/members/update', {
      customerKey: app.ck, groupName: 'Crew', users: [{ primaryEmail: 'm0@example.com' }, { primaryEmail: `m${1 + (i % 2)}@example.com` }],
    }));
    assert.deepEqual(statuses(responses), Array(N).fill(200));
    const crew = (await allMembers(app)).filter((m) => m.groupName === 'Crew').map((m) => m.primaryEmail).sort();
    assert.deepEqual(crew, ['m0@example.com', 'm1@example.com', 'm2@example.com']);
    assert.equal((await allGroups(app)).find((g) => g.groupName === 'Crew').numOfUsersInGroup, 3);
  });

  test('concurrent default moves: all succeed and exactly one group is default afterwards', async (t) => {
    const app = await setup(t, kind);
    const names = Array.from({ length: N }, (_, i) => `G${i}`);
    json(await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups: names.map((groupName) => ({ groupName, isDefault: 'false' })) }), 200);
    for (let round = 0; round < 2; round++) {
      const responses = await times(N, (i) => app.admin.post('/admin/groups/update', {
        customerKey: app.ck, groups: [{ groupName: names[i], isDefault: round === 0 || i % 2 ? 'true' : 'false' }],
      }));
      assert.deepEqual(statuses(responses), Array(N).fill(200), responses.map((r) => r.body).join('\n'));
      const defaults = (await allGroups(app)).filter((g) => g.isDefault);
      assert.equal(defaults.length, 1, JSON.stringify(defaults));
      json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: `joiner${round}`, email: `joiner${round}@example.com`, firstName: 'J', lastName: 'J' }), 200);
      const joined = json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: `joiner${round}` }), 200).users[0].groups;
      assert.deepEqual(joined, [defaults[0].groupName]);
    }
  });

  test('concurrent updates of one user: every attribute kept; group replacements do not mix', async (t) => {
    const app = await setup(t, kind);
    const names = Array.from({ length: N }, (_, i) => `T${i}`);
    json(await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups: names.map((groupName) => ({ groupName, isDefault: 'false' })) }), 200);
    json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'una', email: 'una@example.com', firstName: 'U', lastName: 'U' }), 200);
    const responses = await times(N, (i) => app.admin.post('/admin/users/update', {
      customerKey: app.ck, username: 'una', [`customAttribute${i + 1}`]: `v${i}`, groups: [{ name: names[i] }],
    }));
    assert.deepEqual(statuses(responses), Array(N).fill(200));
    const record = json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'una' }), 200).users[0];
    for (let i = 0; i < N; i++) assert.equal(record[`customAttribute${i + 1}`], `v${i}`);
    assert.equal(record.groups.length, 1, JSON.stringify(record.groups));
    assert.ok(names.includes(record.groups[0]));
  });

  test('concurrent password changes from the same old password: exactly one wins', async (t) => {
    const app = await setup(t, kind);
    json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'pat', email: 'pat@example.com', firstName: 'P', lastName: 'P', password: PASSWORD }), 200);
    const responses = await times(3, (i) => app.admin.post('/admin/users/change-password', {
      customerKey: String(app.ck), username: 'pat', oldPassword: PASSWORD, password: `new passphrase ${i}`,
    }));
    assert.deepEqual(statuses(responses), [200, 400, 400]);
    const winner = responses.findIndex((r) => r.statusCode === 200);
    for (const res of responses.filter((r) => r.statusCode === 400)) {
      assert.deepEqual(res.json(), { customerId: app.customer.customerId, status: 'ERROR', message: 'oldPassword is incorrect' });
    }
    const users = app.composition.services.users;
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'pat', `new passphrase ${winner}`))?.username, 'pat');
    for (let i = 0; i < 3; i++) if (i !== winner) assert.equal(await users.verifyCredentials(app.customer.customerId, 'pat', `new passphrase ${i}`), undefined);
  });
});
