/**
 * Black-box suite of the groups admin API (spec: Groups; DESIGN.md: default group, upsert,
 * pagination), through the signed client, on SQLite and PostgreSQL. Bodies are asserted whole.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { json } from '../helpers/http.ts';

// Open the shared PostgreSQL schema outside any test: postgresStore() registers its closing
// `after` hook on whatever test first calls it, which would close the store after that test.
if (postgresUrl) await postgresStore();

const START = Date.UTC(2026, 0, 15, 12, 0, 0);

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  app.clock.set(START);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

const validation = (message: string) => ({ status: 'ERROR', code: '400', message });

function ok(app: App, message: string) {
  return { customerId: app.customer.customerId, status: 'SUCCESS', message };
}

async function updateGroups(app: App, groups: Record<string, unknown>[]): Promise<void> {
  assert.deepEqual(json(await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups }), 200), ok(app, 'Groups updated successfully.'));
}

async function listGroups(app: App, batchNo = 1, batchSize = 100): Promise<any> {
  return json(await app.admin.post('/admin/groups/getall', { customerKey: app.ck, batchSize, batchNo }), 200);
}

async function listMembers(app: App, batchNo = 1, batchSize = 100): Promise<any> {
  return json(await app.admin.post('/admin/groups/members', { customerKey: app.ck, batchSize, batchNo }), 200);
}

async function createUser(app: App, username: string, groups?: string[]): Promise<number> {
  const res = await app.admin.post('/admin/users/create', {
    customerKey: app.ck, username, email: `${username}@example.com`, firstName: 'F', lastName: 'L',
    ...(groups ? { groups: groups.map((name) => ({ name })) } : {}),
  });
  return json(res, 200).userId;
}

async function groupsOf(app: App, username: string): Promise<string[]> {
  return json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username }), 200).users[0].groups;
}

function defaultGroup(app: App, fields: Record<string, unknown> = {}) {
  return { groupName: 'DEFAULT', customerId: app.customer.customerId, isDefault: true, isCustomerDefault: true, isUserInviteEnabled: false, numOfUsersInGroup: 0, ...fields };
}

function group(app: App, groupName: string, fields: Record<string, unknown> = {}) {
  return {
    groupName, customerId: app.customer.customerId, isDefault: false, isCustomerDefault: false, isUserInviteEnabled: false,
    numOfUsersInGroup: 0, creationDttm: START, lastUpdatedDttm: START, ...fields,
  };
}

function groupsPage(app: App, groups: unknown[], nextBatch: number) {
  return { ...ok(app, 'Successfully fetched groups.'), groups, fetchedCount: groups.length, nextBatch };
}

describeEachStore('groups admin API', (kind) => {
  test('getall: the built-in default group, member counts, epoch-ms dates on the others', async (t) => {
    const app = await setup(t, kind);
    assert.deepEqual(await listGroups(app), groupsPage(app, [defaultGroup(app)], -1));
    await createUser(app, 'ann');
    await createUser(app, 'ben');
    app.clock.advance(1000);
    await updateGroups(app, [{ groupName: 'Engineering', isDefault: 'false', customerId: String(app.customer.customerId), groupAttribute1: 'floor 2' }]);
    await createUser(app, 'cid', ['Engineering']);
    const page = await listGroups(app);
    assert.ok(Number.isInteger(page.groups[1].creationDttm));
    assert.deepEqual(page, groupsPage(app, [
      defaultGroup(app, { numOfUsersInGroup: 2 }),
      group(app, 'Engineering', { numOfUsersInGroup: 1, creationDttm: START + 1000, lastUpdatedDttm: START + 1000, groupAttribute1: 'floor 2' }),
    ], -1));
  });

  test('getall: batches with fetchedCount and nextBatch; batchSize 1..1000', async (t) => {
    const app = await setup(t, kind);
    await updateGroups(app, ['G1', 'G2', 'G3', 'G4'].map((groupName) => ({ groupName, isDefault: 'false' })));
    assert.deepEqual(await listGroups(app, 1, 2), groupsPage(app, [defaultGroup(app), group(app, 'G1')], 2));
    assert.deepEqual(await listGroups(app, 2, 2), groupsPage(app, [group(app, 'G2'), group(app, 'G3')], 3));
    assert.deepEqual(await listGroups(app, 3, 2), groupsPage(app, [group(app, 'G4')], -1));
    assert.deepEqual(await listGroups(app, 4, 2), groupsPage(app, [], -1));
    assert.equal((await listGroups(app, 1, 5)).nextBatch, -1);
    assert.equal((await listGroups(app, 1, 1000)).fetchedCount, 5);
    const bad = (body: Record<string, unknown>) => app.admin.post('/admin/groups/getall', { customerKey: app.ck, ...body });
    assert.deepEqual(json(await bad({ batchSize: 1001, batchNo: 1 }), 400), validation('batchSize must be <= 1000'));
    assert.deepEqual(json(await bad({ batchSize: 0, batchNo: 1 }), 400), validation('batchSize must be >= 1'));
    assert.deepEqual(json(await bad({ batchSize: 10, batchNo: 0 }), 400), validation('batchNo must be >= 1'));
    assert.deepEqual(json(await bad({ batchSize: 10 }), 400), validation('batchNo is required'));
  });

  test('update: upsert creates, then merges attributes 1..50 and keeps the creation date', async (t) => {
    const app = await setup(t, kind);
    const all = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`groupAttribute${i + 1}`, `v${i + 1}`]));
    await updateGroups(app, [{ groupName: 'Ops', isDefault: 'false', ...all }]);
    assert.deepEqual((await listGroups(app)).groups[1], group(app, 'Ops', all));
    app.clock.advance(60_000);
    await updateGroups(app, [{ groupName: 'OPS', isDefault: 'false', groupAttribute2: 'two', groupAttribute50: null }]);
    assert.deepEqual(await listGroups(app), groupsPage(app, [
      defaultGroup(app),
      group(app, 'Ops', { ...all, groupAttribute2: 'two', lastUpdatedDttm: START + 60_000 }),
    ], -1));
    // Unknown attribute names are ignored; attribute values must be strings.
    await updateGroups(app, [{ groupName: 'Ops', isDefault: 'false', groupAttribute51: 'x' }]);
    assert.ok(!('groupAttribute51' in (await listGroups(app)).groups[1]));
    const numeric = await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups: [{ groupName: 'Ops', isDefault: 'false', groupAttribute1: 5 }] });
    assert.equal(json(numeric, 400).code, '400');
    assert.equal((await listGroups(app)).groups[1].groupAttribute1, 'v1');
  });

  test('update: isDefault moves the default group; new users join it; "false" moves it back', async (t) => {
    const app = await setup(t, kind);
    await updateGroups(app, [{ groupName: 'Staff', isDefault: 'false' }, { groupName: 'Guests', isDefault: 'false' }]);
    app.clock.advance(1000);
    await updateGroups(app, [{ groupName: 'Staff', isDefault: 'true' }]);
    assert.deepEqual(await listGroups(app), groupsPage(app, [
      defaultGroup(app, { isDefault: false }),
      group(app, 'Staff', { isDefault: true, lastUpdatedDttm: START + 1000 }),
      group(app, 'Guests'),
    ], -1));
    await createUser(app, 'dan');
    assert.deepEqual(await groupsOf(app, 'dan'), ['Staff']);

    // isDefault as a JSON boolean is accepted too.
    await updateGroups(app, [{ groupName: 'Guests', isDefault: true }]);
    await createUser(app, 'eva');
    assert.deepEqual(await groupsOf(app, 'eva'), ['Guests']);
    assert.deepEqual((await listGroups(app)).groups.map((g: any) => [g.groupName, g.isDefault]), [['DEFAULT', false], ['Staff', false], ['Guests', true]]);

    // "false" on the current default hands it back to the built-in group; on another group it changes nothing.
    await updateGroups(app, [{ groupName: 'Staff', isDefault: false }]);
    assert.deepEqual((await listGroups(app)).groups.map((g: any) => [g.groupName, g.isDefault]), [['DEFAULT', false], ['Staff', false], ['Guests', true]]);
    await updateGroups(app, [{ groupName: 'Guests', isDefault: 'false' }]);
    assert.deepEqual((await listGroups(app)).groups.map((g: any) => [g.groupName, g.isDefault]), [['DEFAULT', true], ['Staff', false], ['Guests', false]]);
    await createUser(app, 'fay');
    assert.deepEqual(await groupsOf(app, 'fay'), ['DEFAULT']);
    // "false" on the built-in group keeps it default: there is always one.
    await updateGroups(app, [{ groupName: 'DEFAULT', isDefault: 'false' }]);
    assert.deepEqual((await listGroups(app)).groups.map((g: any) => [g.groupName, g.isDefault]), [['DEFAULT', true], ['Staff', false], ['Guests', false]]);
    // A new group can be created as the default in one call.
    await updateGroups(app, [{ groupName: 'Fresh', isDefault: 'true' }]);
    assert.deepEqual((await listGroups(app)).groups.map((g: any) => [g.groupName, g.isDefault]), [['DEFAULT', false], ['Staff', false], ['Guests', false], ['Fresh', true]]);
  });

  test('update: refused requests change nothing', async (t) => {
    const app = await setup(t, kind);
    await updateGroups(app, [{ groupName: 'Alpha', isDefault: 'false', groupAttribute1: 'a' }]);
    const before = await listGroups(app);
    const post = (groups: unknown) => app.admin.post('/admin/groups/update', { customerKey: app.ck, groups });
    assert.deepEqual(json(await post([{ groupName: 'Beta', isDefault: 'false' }, { groupName: 'beta', isDefault: 'false' }]), 400),
      validation('groups[1].groupName appears twice in the request'));
    assert.deepEqual(json(await post([{ groupName: 'Beta', isDefault: 'true' }, { groupName: 'Gamma', isDefault: 'true' }]), 400),
      validation('groups may mark at most one group as default'));
    assert.equal(json(await post([{ groupName: 'Beta', isDefault: 'yes' }]), 400).code, '400');
    assert.deepEqual(json(await post([{ groupName: 'Beta' }]), 400), validation('isDefault is required'));
    assert.equal(json(await post([{ groupName: '', isDefault: 'false' }]), 400).code, '400');
    assert.equal(json(await post([{ groupName: ' padded ', isDefault: 'false' }]), 400).code, '400');
    assert.equal(json(await post([]), 400).code, '400');
    assert.deepEqual(json(await app.admin.post('/admin/groups/update', { customerKey: app.ck }), 400), validation('groups is required'));
    assert.deepEqual(await listGroups(app), before);
  });

  test('members/update adds and removes by e-mail; unknown group 404, unknown e-mail 400 with nothing changed', async (t) => {
    const app = await setup(t, kind);
    await updateGroups(app, [{ groupName: 'Team', isDefault: 'false' }]);
    await createUser(app, 'gus');
    await createUser(app, 'hal');
    const post = (groupName: string, users: unknown) => app.admin.post('/admin/groups/members/update', { customerKey: app.ck, groupName, users });

    assert.deepEqual(json(await post('team', [{ primaryEmail: 'GUS@example.com' }, { primaryEmail: 'hal@example.com' }]), 200), ok(app, 'Group members updated successfully.'));
    assert.deepEqual(await groupsOf(app, 'gus'), ['DEFAULT', 'Team']);
    assert.equal((await listGroups(app)).groups[1].numOfUsersInGroup, 2);
    // Adding an existing member again is harmless.
    json(await post('Team', [{ primaryEmail: 'gus@example.com' }]), 200);
    assert.equal((await listGroups(app)).groups[1].numOfUsersInGroup, 2);

    assert.deepEqual(json(await post('Team', [{ primaryEmail: 'gus@example.com', action: 'remove' }]), 200), ok(app, 'Group members updated successfully.'));
    assert.deepEqual(await groupsOf(app, 'gus'), ['DEFAULT']);
    assert.deepEqual(await groupsOf(app, 'hal'), ['DEFAULT', 'Team']);
    json(await post('Team', [{ primaryEmail: 'gus@example.com', action: 'remove' }]), 200);

    const before = await listMembers(app);
    assert.deepEqual(json(await post('Nope', [{ primaryEmail: 'gus@example.com' }]), 404), { status: 'ERROR', code: '404', message: 'group Nope does not exist' });
    assert.deepEqual(json(await post('Team', [{ primaryEmail: 'gus@example.com' }, { primaryEmail: 'who@example.com' }]), 400),
      validation('users[1].primaryEmail does not belong to any user'));
    assert.deepEqual(json(await post('Team', [{ primaryEmail: 'hal@example.com', action: 'remove' }, { primaryEmail: 'who@example.com', action: 'remove' }]), 400),
      validation('users[1].primaryEmail does not belong to any user'));
    assert.equal(json(await post('Team', [{ primaryEmail: 'gus@example.com', action: 'delete' }]), 400).code, '400');
    assert.equal(json(await post('Team', []), 400).code, '400');
    assert.deepEqual(json(await app.admin.post('/admin/groups/members/update', { customerKey: app.ck, users: [{ primaryEmail: 'gus@example.com' }] }), 400),
      validation('groupName is required'));
    assert.deepEqual(await listMembers(app), before);
  });

  test('members: user-group mappings with e-mail, group name and epoch-ms dates, in batches', async (t) => {
    const app = await setup(t, kind);
    const page = (items: unknown[], nextBatch: number) => ({ ...ok(app, 'Successfully fetched group members.'), groupDetails: items, fetchedCount: items.length, nextBatch });
    const mapping = (primaryEmail: string, groupName: string, at: number) => ({ primaryEmail, creationDttm: at, lastUpdatedDttm: at, groupName });
    assert.deepEqual(await listMembers(app), page([], -1));
    await updateGroups(app, [{ groupName: 'Red', isDefault: 'false' }, { groupName: 'Blue', isDefault: 'false' }]);
    await createUser(app, 'ida');
    app.clock.advance(1000);
    await createUser(app, 'jon', ['Red', 'Blue']);
    app.clock.advance(1000);
    json(await app.admin.post('/admin/groups/members/update', { customerKey: app.ck, groupName: 'Blue', users: [{ primaryEmail: 'ida@example.com' }] }), 200);

    const all = [
      mapping('ida@example.com', 'DEFAULT', START),
      mapping('jon@example.com', 'Red', START + 1000),
      mapping('jon@example.com', 'Blue', START + 1000),
      mapping('ida@example.com', 'Blue', START + 2000),
    ];
    assert.deepEqual(await listMembers(app), page(all, -1));
    assert.deepEqual(await listMembers(app, 1, 3), page(all.slice(0, 3), 2));
    assert.deepEqual(await listMembers(app, 2, 3), page(all.slice(3), -1));
    assert.deepEqual(await listMembers(app, 3, 3), page([], -1));
    assert.deepEqual(json(await app.admin.post('/admin/groups/members', { customerKey: app.ck, batchSize: 1001, batchNo: 1 }), 400), validation('batchSize must be <= 1000'));

    // A mapping follows its user's e-mail and disappears with the user.
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ida', email: 'ida.new@example.com' }), 200);
    json(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 'jon' }), 200);
    assert.deepEqual(await listMembers(app), page([mapping('ida.new@example.com', 'DEFAULT', START), mapping('ida.new@example.com', 'Blue', START + 2000)], -1));
  });
});
