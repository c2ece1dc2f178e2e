/**
 * Black-box suite of the users admin API (spec: Users; DESIGN.md: identity service decisions),
 * through the signed client, on SQLite and PostgreSQL. Every response body is asserted whole.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { json, text } from '../helpers/http.ts';

// Open the shared PostgreSQL schema outside any test: postgresStore() registers its closing
// `after` hook on whatever test first calls it, which would close the store after that test.
if (postgresUrl) await postgresStore();

const START = Date.UTC(2026, 0, 15, 12, 0, 0);
const START_MINUTE = '2026-01-15T12:00Z';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MINUTE_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$/;
const NOT_AUTHORISED = 'You are not authorized to perform this operation.';
const PASSWORD = 'correct horse battery';

async function setup(t: TestContext, kind: StoreKind): Promise<TestApp & { ck: number }> {
  const app = await build(t, kind);
  app.clock.set(START);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

const validation = (message: string) => ({ status: 'ERROR', code: '400', message });

async function createUser(app: TestApp & { ck: number }, fields: Record<string, unknown>): Promise<{ userId: number; username: string; email: string }> {
  const body = json(await app.admin.post('/admin/users/create', { customerKey: app.ck, firstName: 'First', lastName: 'Last', ...fields }), 200);
  assert.equal(body.status, 'SUCCESS');
  return body;
}

async function createGroups(app: TestApp & { ck: number }, ...names: string[]): Promise<void> {
  json(await app.admin.post('/admin/groups/update', { customerKey: app.ck, groups: names.map((groupName) => ({ groupName, isDefault: 'false' })) }), 200);
}

async function getUser(app: TestApp & { ck: number }, username: string, query?: string): Promise<any> {
  return json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username }, { query }), 200);
}

/** The user record with every documented field at its "unset" value, plus the given ones. */
function userRecord(app: TestApp, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    customerId: app.customer.customerId,
    fname: 'First',
    lname: 'Last',
    primaryPhone: '',
    markForDeletion: false,
    secondFactorAuthType: 'NONE',
    primaryEmail: '',
    idpEnabled: false,
    creationDttm: START_MINUTE,
    lastUpdatedDttm: START_MINUTE,
    username: '',
    lastVerifiedDttm: 0,
    phoneVerified: false,
    emailVerified: false,
    preferredLocale: '',
    isEnforce_2faOnNextLogin: false,
    guid: '',
    sourceType: 'API',
    sourceIdentifier: '',
    groups: ['DEFAULT'],
    customAttributesAsList: [],
    customAttribute50: '',
    ...fields,
  };
}

/** Asserts the users/get envelope whole: generated guid checked by format, the rest by value. */
function assertGetEnvelope(app: TestApp, body: any, expected: { userId: number; username: string; email: string; phone?: string; record: Record<string, unknown> }): void {
  assert.match(body.guid, UUID);
  assert.deepEqual(body, {
    userId: expected.userId,
    guid: body.guid,
    username: expected.username,
    email: expected.email,
    status: 'SUCCESS',
    message: 'Successfully fetched user details.',
    phone: expected.phone ?? '',
    authType: 'NONE',
    users: [userRecord(app, {
      username: expected.username,
      primaryEmail: expected.email,
      primaryPhone: expected.phone ?? '',
      guid: body.guid,
      role: 'END_USER',
      ...expected.record,
    })],
  });
}

const allCustomAttributes = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`customAttribute${i + 1}`, `value ${i + 1}`]));

describeEachStore('users admin API', (kind) => {
  test('create takes every writeable field; get returns them with the spec types and formats', async (t) => {
    const app = await setup(t, kind);
    await createGroups(app, 'Engineering', 'Sales');
    const created = await app.admin.post('/admin/users/create', {
      customerKey: app.ck,
      username: 'alice',
      email: 'Alice@Example.com',
      firstName: 'Alice',
      lastName: 'Liddell',
      phone: '+1 555 0100',
      alternateEmail: 'alice.alt@example.org',
      groups: [{ name: 'Engineering', attributes: [{ name: 'team', value: 'core' }] }, { name: 'sales' }],
      ...allCustomAttributes,
    });
    const body = json(created, 200);
    assert.ok(Number.isInteger(body.userId) && body.userId > 0);
    assert.deepEqual(body, { userId: body.userId, username: 'alice', email: 'Alice@Example.com', status: 'SUCCESS', message: 'User created successfully.' });

    const fetched = await getUser(app, 'alice');
    assertGetEnvelope(app, fetched, {
      userId: body.userId, username: 'alice', email: 'Alice@Example.com', phone: '+1 555 0100',
      record: {
        fname: 'Alice', lname: 'Liddell',
        groups: ['Engineering', 'Sales'],
        customAttributesAsList: Array.from({ length: 50 }, (_, i) => ({ name: `customAttribute${i + 1}`, value: `value ${i + 1}` })),
        ...allCustomAttributes,
      },
    });
    const record = fetched.users[0];
    assert.match(record.creationDttm, MINUTE_UTC);
    assert.match(record.lastUpdatedDttm, MINUTE_UTC);
    assert.equal(typeof record.customerId, 'number');
    assert.equal(typeof record.lastVerifiedDttm, 'number');
    for (const flag of ['markForDeletion', 'idpEnabled', 'phoneVerified', 'emailVerified', 'isEnforce_2faOnNextLogin']) assert.equal(typeof record[flag], 'boolean', flag);

    // The group object's attributes belong to the membership; no documented response shows them.
    const rows = await app.composition.store.db.selectFrom('group_members').innerJoin('groups', 'groups.id', 'group_members.group_id')
      .select(['groups.name', 'group_members.attributes']).where('group_members.user_id', '=', body.userId).orderBy('groups.name').execute();
    assert.deepEqual(rows.map((r) => [r.name, JSON.parse(r.attributes)]), [['Engineering', [{ name: 'team', value: 'core' }]], ['Sales', []]]);
  });

  test('create with a password stores an argon2id hash and never returns it', async (t) => {
    const app = await setup(t, kind);
    const res = await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'bob', email: 'bob@example.com', firstName: 'Bob', lastName: 'B', password: PASSWORD });
    const body = json(res, 200);
    assert.deepEqual(body, { userId: body.userId, username: 'bob', email: 'bob@example.com', status: 'SUCCESS', message: 'User created successfully.' });
    const row = await app.composition.store.db.selectFrom('users').select('password_hash').where('id', '=', body.userId).executeTakeFirstOrThrow();
    assert.match(String(row.password_hash), /^\$argon2id\$/);
    assert.ok(!String(row.password_hash).includes(PASSWORD));
    const fetched = await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'bob' });
    assert.ok(!fetched.body.includes(PASSWORD) && !fetched.body.includes('argon2'));
    const users = app.composition.services.users;
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'bob', PASSWORD))?.id, body.userId);
    assert.equal(await users.verifyCredentials(app.customer.customerId, 'bob', 'not the password'), undefined);

    const weak = await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'carl', email: 'carl@example.com', firstName: 'C', lastName: 'C', password: 'short' });
    assert.deepEqual(json(weak, 400), validation('password must be 8 to 128 characters'));
  });

  test('create: e-mail defaults to an e-mail username; otherwise a missing e-mail is a 400', async (t) => {
    const app = await setup(t, kind);
    const body = json(await app.admin.post('/admin/users/create', { customerKey: String(app.ck), username: 'dora@example.com', firstName: 'Dora', lastName: 'D' }), 200);
    assert.deepEqual(body, { userId: body.userId, username: 'dora@example.com', email: 'dora@example.com', status: 'SUCCESS', message: 'User created successfully.' });
    assert.deepEqual(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'eve', firstName: 'Eve', lastName: 'E' }), 400), validation('email is required'));
    assert.deepEqual(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'eve', email: null, firstName: 'Eve', lastName: 'E' }), 400), validation('email is required'));
    assert.deepEqual(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'eve@', firstName: 'Eve', lastName: 'E' }), 400), validation('email is required'));
    assert.deepEqual(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'eve', email: 'eve@example.com', lastName: 'E' }), 400), validation('firstName is required'));
    assert.deepEqual(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, email: 'eve@example.com', firstName: 'Eve', lastName: 'E' }), 400), validation('username is required'));
    assert.equal(json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'eve', email: 'not-an-email', firstName: 'Eve', lastName: 'E' }), 400).code, '400');
    assert.equal(json(await app.admin.post('/admin/users/create', { customerKey: 'abc', username: 'eve', email: 'eve@example.com', firstName: 'Eve', lastName: 'E' }), 400).code, '400');
    // Only dora exists.
    const list = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200);
    assert.deepEqual(list.users.map((u: any) => u.username), ['dora@example.com']);
  });

  test('create: a duplicate username or e-mail in any case is a 409 and adds nothing', async (t) => {
    const app = await setup(t, kind);
    await createUser(app, { username: 'Frank', email: 'frank@example.com' });
    const conflict = (message: string) => ({ status: 'ERROR', code: '409', message });
    const sameName = await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'fRANK', email: 'other@example.com', firstName: 'F', lastName: 'F' });
    assert.deepEqual(json(sameName, 409), conflict('a user with this username already exists'));
    const sameEmail = await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'frank2', email: 'FRANK@EXAMPLE.COM', firstName: 'F', lastName: 'F' });
    assert.deepEqual(json(sameEmail, 409), conflict('a user with this email already exists'));
    const emailAsUsername = await app.admin.post('/admin/users/create', { customerKey: app.ck, username: 'Frank@Example.com', firstName: 'F', lastName: 'F' });
    assert.deepEqual(json(emailAsUsername, 409), conflict('a user with this email already exists'));
    const count = json(await app.admin.get('/admin/users/stats/count'), 200);
    assert.equal(count.data.count, 1);
  });

  test('create: an unknown group is a 400 and creates nothing', async (t) => {
    const app = await setup(t, kind);
    await createGroups(app, 'Engineering');
    const res = await app.admin.post('/admin/users/create', {
      customerKey: app.ck, username: 'gina', email: 'gina@example.com', firstName: 'G', lastName: 'G',
      groups: [{ name: 'Engineering' }, { name: 'Nope' }],
    });
    assert.deepEqual(json(res, 400), validation('groups[1].name names a group that does not exist: Nope'));
    assert.deepEqual(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'gina' }), 404),
      { username: 'gina', status: 'FAILED', message: 'Invalid username or email.' });
    const members = json(await app.admin.post('/admin/groups/members', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200);
    assert.deepEqual(members.groupDetails, []);
  });

  test('update needs only customerKey and username; omitted and null fields keep their values', async (t) => {
    const app = await setup(t, kind);
    const { userId } = await createUser(app, {
      username: 'hank', email: 'hank@example.com', firstName: 'Hank', lastName: 'Hill', phone: '555-0101',
      alternateEmail: 'hank@alt.example', customAttribute1: 'one', customAttribute2: 'two',
    });
    app.clock.advance(5 * 60_000);
    const bare = await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'hank' });
    assert.deepEqual(json(bare, 200), { userId, username: 'hank', email: 'hank@example.com', status: 'SUCCESS', message: 'User updated successfully.' });
    app.clock.advance(5 * 60_000);
    const partial = await app.admin.post('/admin/users/update', {
      customerKey: app.ck, username: 'HANK', firstName: 'Henry', phone: null, lastName: null, email: null,
      alternateEmail: null, groups: null, password: null, customAttribute2: 'deux', customAttribute3: 'trois', customAttribute1: null,
      authType: 'TOTP', transactionName: 'ignored', adminLoginSecondFactor: false,
    });
    assert.deepEqual(json(partial, 200), { userId, username: 'hank', email: 'hank@example.com', status: 'SUCCESS', message: 'User updated successfully.' });
    assertGetEnvelope(app, await getUser(app, 'hank'), {
      userId, username: 'hank', email: 'hank@example.com', phone: '555-0101',
      record: {
        fname: 'Henry', lname: 'Hill', lastUpdatedDttm: '2026-01-15T12:10Z',
        customAttribute1: 'one', customAttribute2: 'deux', customAttribute3: 'trois',
        customAttributesAsList: [
          { name: 'customAttribute1', value: 'one' }, { name: 'customAttribute2', value: 'deux' }, { name: 'customAttribute3', value: 'trois' },
        ],
      },
    });

    const changed = await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'hank', email: 'Henry@Example.com', lastName: '', phone: '' });
    assert.deepEqual(json(changed, 200), { userId, username: 'hank', email: 'Henry@Example.com', status: 'SUCCESS', message: 'User updated successfully.' });
    const byNewEmail = await getUser(app, 'henry@example.com');
    assert.equal(byNewEmail.users[0].lname, '');
    assert.equal(byNewEmail.users[0].primaryPhone, '');
    assert.deepEqual(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'hank@example.com' }), 404),
      { username: 'hank@example.com', status: 'FAILED', message: 'Invalid username or email.' });
  });

  test('update: groups replaces memberships; a password can be set; unknown users and taken e-mails are refused', async (t) => {
    const app = await setup(t, kind);
    await createGroups(app, 'Engineering', 'Sales', 'Support');
    const { userId } = await createUser(app, { username: 'ivy', email: 'ivy@example.com', groups: [{ name: 'Engineering' }, { name: 'Sales' }] });
    await createUser(app, { username: 'jack', email: 'jack@example.com' });

    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', groups: [{ name: 'support' }] }), 200);
    assert.deepEqual((await getUser(app, 'ivy')).users[0].groups, ['Support']);
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', firstName: 'Ivy' }), 200);
    assert.deepEqual((await getUser(app, 'ivy')).users[0].groups, ['Support'], 'omitted groups keep memberships');
    const badGroup = await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', firstName: 'Changed', groups: [{ name: 'Nope' }] });
    assert.deepEqual(json(badGroup, 400), validation('groups[0].name names a group that does not exist: Nope'));
    const after = await getUser(app, 'ivy');
    assert.equal(after.users[0].fname, 'Ivy', 'a refused update changes nothing');
    assert.deepEqual(after.users[0].groups, ['Support']);

    const users = app.composition.services.users;
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', password: PASSWORD }), 200);
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'ivy', PASSWORD))?.id, userId);
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', password: 'another good passphrase' }), 200);
    assert.equal(await users.verifyCredentials(app.customer.customerId, 'ivy', PASSWORD), undefined);
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'ivy', 'another good passphrase'))?.id, userId);
    assert.deepEqual(json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', password: 'password123' }), 400),
      validation('password is too common; choose another'));

    assert.deepEqual(json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'nobody' }), 404),
      { status: 'ERROR', code: '404', message: 'Invalid username or email.' });
    assert.deepEqual(json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'ivy', email: 'JACK@example.com' }), 409),
      { status: 'ERROR', code: '409', message: 'a user with this email already exists' });
    assert.deepEqual(json(await app.admin.post('/admin/users/update', { customerKey: app.ck, firstName: 'X' }), 400), validation('username is required'));
    assert.equal((await getUser(app, 'ivy')).email, 'ivy@example.com');
  });

  test('getall: batches in creation order with fetchedCount and nextBatch', async (t) => {
    const app = await setup(t, kind);
    const names = ['u1', 'u2', 'u3', 'u4', 'u5'];
    const ids: number[] = [];
    for (const name of names) {
      ids.push((await createUser(app, { username: name, email: `${name}@example.com`, phone: '1' })).userId);
      app.clock.advance(60_000);
    }
    const batch = async (batchNo: number, batchSize: number) =>
      json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize, batchNo }), 200);
    const envelope = (users: unknown[], nextBatch: number) => ({
      userId: 0, guid: '', username: '', email: '', status: 'SUCCESS', message: 'Successfully fetched users.', phone: '', authType: '',
      users, fetchedCount: users.length, nextBatch,
    });
    const expected = (i: number, guid: string) => userRecord(app, {
      username: names[i], primaryEmail: `${names[i]}@example.com`, primaryPhone: '1', guid,
      creationDttm: `2026-01-15T12:0${i}Z`, lastUpdatedDttm: `2026-01-15T12:0${i}Z`,
    });

    const first = await batch(1, 2);
    for (const u of first.users) assert.match(u.guid, UUID);
    assert.deepEqual(first, envelope([expected(0, first.users[0].guid), expected(1, first.users[1].guid)], 2));
    const second = await batch(2, 2);
    assert.deepEqual(second, envelope([expected(2, second.users[0].guid), expected(3, second.users[1].guid)], 3));
    const third = await batch(3, 2);
    assert.deepEqual(third, envelope([expected(4, third.users[0].guid)], -1));
    assert.deepEqual(await batch(4, 2), envelope([], -1));
    assert.equal((await batch(1, 5)).nextBatch, -1, 'an exact fit has no further batch');
    assert.deepEqual((await batch(1, 500)).users.map((u: any) => u.username), names);
    // role is shown in the single-user fetch only.
    assert.ok(!('role' in (first.users[0] as object)));
    assert.equal(new Set([...first.users, ...second.users, ...third.users].map((u: any) => u.guid)).size, 5);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
  });

  test('getall: batchSize 1..500 and batchNo >= 1, all required integers', async (t) => {
    const app = await setup(t, kind);
    const post = (body: Record<string, unknown>) => app.admin.post('/admin/users/getall', { customerKey: app.ck, ...body });
    assert.deepEqual(json(await post({ batchSize: 0, batchNo: 1 }), 400), validation('batchSize must be >= 1'));
    assert.deepEqual(json(await post({ batchSize: 501, batchNo: 1 }), 400), validation('batchSize must be <= 500'));
    assert.deepEqual(json(await post({ batchSize: 10, batchNo: 0 }), 400), validation('batchNo must be >= 1'));
    assert.deepEqual(json(await post({ batchSize: '10', batchNo: 1 }), 400), validation('batchSize must be integer'));
    assert.deepEqual(json(await post({ batchSize: 1.5, batchNo: 1 }), 400), validation('batchSize must be integer'));
    assert.deepEqual(json(await post({ batchNo: 1 }), 400), validation('batchSize is required'));
    assert.deepEqual(json(await post({ batchSize: 10 }), 400), validation('batchNo is required'));
    assert.equal(json(await post({ batchSize: 500, batchNo: 1 }), 200).fetchedCount, 0);
    assert.equal(json(await post({ batchSize: 1, batchNo: 1_000_000 }), 200).nextBatch, -1);
  });

  test('includePwdExpDttm shows passwordExpiryDate only with a customer policy and a password', async (t) => {
    const app = await setup(t, kind);
    await createUser(app, { username: 'kate', email: 'kate@example.com', password: PASSWORD });
    await createUser(app, { username: 'liam', email: 'liam@example.com' });
    const list = async (query?: string) => json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }, { query }), 200).users;
    const expiryOf = (users: any[]) => users.map((u) => ('passwordExpiryDate' in u ? u.passwordExpiryDate : null));

    assert.deepEqual(expiryOf(await list('includePwdExpDttm=true')), [null, null], 'no policy: no expiry');
    await app.composition.services.customers.setPasswordExpiryDays(app.customer.customerKey, 90);
    assert.deepEqual(expiryOf(await list('includePwdExpDttm=true')), ['2026-04-15T12:00Z', null]);
    assert.deepEqual(expiryOf(await list()), [null, null], 'not asked: not shown');
    assert.deepEqual(expiryOf(await list('includePwdExpDttm=false')), [null, null]);
    assert.deepEqual(expiryOf((await getUser(app, 'kate', 'includePwdExpDttm=true')).users), ['2026-04-15T12:00Z']);
    assert.deepEqual(expiryOf((await getUser(app, 'kate')).users), [null]);
    assert.deepEqual(expiryOf((await getUser(app, 'liam', 'includePwdExpDttm=true')).users), [null]);

    // A new password restarts the period.
    app.clock.advance(10 * 86_400_000);
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'kate', password: 'a fresh passphrase' }), 200);
    assert.deepEqual(expiryOf((await getUser(app, 'kate', 'includePwdExpDttm=true')).users), ['2026-04-25T12:00Z']);
    await app.composition.services.customers.setPasswordExpiryDays(app.customer.customerKey, null);
    assert.deepEqual(expiryOf((await getUser(app, 'kate', 'includePwdExpDttm=true')).users), [null]);
    const bad = await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }, { query: 'includePwdExpDttm=yes' });
    assert.equal(json(bad, 400).code, '400');
  });

  test('get: by username or e-mail, case-insensitive; an exact username beats another user\'s e-mail; 404 when unknown', async (t) => {
    const app = await setup(t, kind);
    const mona = await createUser(app, { username: 'mona', email: 'shared@example.com', firstName: 'Mona' });
    // nina's username is mona's e-mail address.
    const nina = await createUser(app, { username: 'Shared@Example.com', email: 'nina@example.com', firstName: 'Nina' });

    for (const login of ['mona', 'MONA', 'Mona']) assert.equal((await getUser(app, login)).userId, mona.userId, login);
    for (const login of ['nina@example.com', 'NINA@EXAMPLE.COM']) assert.equal((await getUser(app, login)).userId, nina.userId, login);
    const exact = await getUser(app, 'shared@example.com');
    assertGetEnvelope(app, exact, { userId: nina.userId, username: 'Shared@Example.com', email: 'nina@example.com', record: { fname: 'Nina' } });

    // The spec's request table spells the field `Username`; its sample `username`.
    assert.equal(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, Username: 'MONA' }), 200).userId, mona.userId);
    assert.equal(json(await app.admin.post('/admin/users/search', { customerKey: app.ck, Username: 'mona' }), 200).userId, mona.userId);
    assert.equal(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'nina@example.com', Username: 'mona' }), 200).userId, nina.userId);
    assert.deepEqual(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, Username: 'ghost' }), 404), { username: 'ghost', status: 'FAILED', message: 'Invalid username or email.' });
    const missing = await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'Nobody@example.com' });
    assert.deepEqual(json(missing, 404), { username: 'Nobody@example.com', status: 'FAILED', message: 'Invalid username or email.' });
    assert.deepEqual(json(await app.admin.post('/admin/users/get', { customerKey: app.ck }), 400), validation('username is required'));
    assert.equal(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 42 }), 400).code, '400');
  });

  test('search (extension): USER_FOUND with the get envelope, USER_NOT_FOUND otherwise', async (t) => {
    const app = await setup(t, kind);
    const { userId } = await createUser(app, { username: 'olga', email: 'olga@example.com' });
    const found = json(await app.admin.post('/admin/users/search', { customerKey: app.ck, username: 'OLGA@example.com' }), 200);
    assert.match(found.guid, UUID);
    assert.deepEqual(found, {
      userId, guid: found.guid, username: 'olga', email: 'olga@example.com', status: 'USER_FOUND', message: 'User found.', phone: '', authType: 'NONE',
      users: [userRecord(app, { username: 'olga', primaryEmail: 'olga@example.com', guid: found.guid, role: 'END_USER' })],
    });
    const missing = json(await app.admin.post('/admin/users/search', { customerKey: app.ck, username: 'nobody' }), 200);
    assert.deepEqual(missing, { status: 'USER_NOT_FOUND', message: 'Invalid username or email.' });
  });

  test('delete: removes the user and memberships; unknown user or bad body is a 403 plain text', async (t) => {
    const app = await setup(t, kind);
    await createUser(app, { username: 'pete', email: 'pete@example.com' });
    await createUser(app, { username: 'quin', email: 'quin@example.com' });
    const res = await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 'PETE' });
    assert.deepEqual(json(res, 200), { customerId: app.customer.customerId, status: 'SUCCESS', message: 'User deleted successfully.' });
    assert.deepEqual(json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'pete' }), 404),
      { username: 'pete', status: 'FAILED', message: 'Invalid username or email.' });
    assert.equal(text(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 'pete' }), 403), NOT_AUTHORISED);
    const members = json(await app.admin.post('/admin/groups/members', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200);
    assert.deepEqual(members.groupDetails.map((m: any) => m.primaryEmail), ['quin@example.com']);
    // By e-mail too, and the username is free again.
    json(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 'quin@example.com' }), 200);
    await createUser(app, { username: 'pete', email: 'pete@example.com' });
    assert.equal(json(await app.admin.get('/admin/users/stats/count'), 200).data.count, 1);
  });

  test('delete with an incorrect body is the same 403 plain text', async (t) => {
    const app = await setup(t, kind);
    assert.equal(text(await app.admin.post('/admin/users/delete', { customerKey: app.ck }), 403), NOT_AUTHORISED);
    assert.equal(text(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 7 }), 403), NOT_AUTHORISED);
  });

  test('disable and enable by username or e-mail; the state persists; unknown users are a 403 plain text', async (t) => {
    const app = await setup(t, kind);
    const { userId } = await createUser(app, { username: 'rita', email: 'rita@example.com', password: PASSWORD });
    const users = app.composition.services.users;
    const before = await getUser(app, 'rita');
    const ok = (action: string) => ({ customerId: app.customer.customerId, status: 'SUCCESS', message: `User ${action}d successfully.` });

    assert.deepEqual(json(await app.admin.post('/admin/users/disable', { customerKey: app.ck, username: 'RITA' }), 200), ok('disable'));
    assert.equal((await users.findById(app.customer.customerId, userId))?.isDisabled, true);
    assert.equal(await users.verifyCredentials(app.customer.customerId, 'rita', PASSWORD), undefined, 'a disabled user cannot sign in');
    assert.deepEqual(json(await app.admin.post('/admin/users/disable', { customerKey: app.ck, username: 'rita@example.com' }), 200), ok('disable'), 'idempotent');
    // The spec's user record has no disabled field: the wire stays as the spec shows it.
    assert.deepEqual(await getUser(app, 'rita'), before);

    assert.deepEqual(json(await app.admin.post('/admin/users/enable', { customerKey: app.ck, username: 'Rita@Example.com' }), 200), ok('enable'));
    assert.equal((await users.findById(app.customer.customerId, userId))?.isDisabled, false);
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'rita', PASSWORD))?.id, userId);
    assert.deepEqual(json(await app.admin.post('/admin/users/enable', { customerKey: app.ck, username: 'rita' }), 200), ok('enable'));

    for (const action of ['disable', 'enable']) {
      assert.equal(text(await app.admin.post(`/admin/users/${action}`, { customerKey: app.ck, username: 'nobody' }), 403), 'Invalid username or email.');
    }
  });

  test('stats/count counts end users, not those marked for deletion', async (t) => {
    const app = await setup(t, kind);
    const count = async () => json(await app.admin.get('/admin/users/stats/count'), 200);
    assert.deepEqual(await count(), { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: 0 } });
    for (const name of ['s1', 's2', 's3']) await createUser(app, { username: name, email: `${name}@example.com` });
    assert.deepEqual(await count(), { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: 3 } });
    // No admin route marks a user for deletion; the column is set the way an operator's job would.
    await app.composition.store.db.updateTable('users').set({ mark_for_deletion: 1 })
      .where('customer_id', '=', app.customer.customerId).where('username_norm', '=', 's2').execute();
    assert.equal((await count()).data.count, 2);
    assert.equal((await getUser(app, 's2')).users[0].markForDeletion, true);
    json(await app.admin.post('/admin/users/disable', { customerKey: app.ck, username: 's3' }), 200);
    assert.equal((await count()).data.count, 2, 'disabled users are still end users');
    json(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 's1' }), 200);
    assert.equal((await count()).data.count, 1);
    json(await app.admin.post('/admin/users/delete', { customerKey: app.ck, username: 's2' }), 200);
    assert.equal((await count()).data.count, 1);
  });

  test('change-password: success, wrong old password, identical, weak, unknown user', async (t) => {
    const app = await setup(t, kind);
    const { userId } = await createUser(app, { username: 'sam', email: 'sam@example.com', password: PASSWORD });
    const users = app.composition.services.users;
    const change = (body: Record<string, unknown>) => app.admin.post('/admin/users/change-password', { customerKey: String(app.ck), username: 'sam', ...body });
    const failed = (message: string) => ({ customerId: app.customer.customerId, status: 'ERROR', message });

    assert.deepEqual(json(await change({ oldPassword: 'wrong password!', password: 'a new passphrase' }), 400), failed('oldPassword is incorrect'));
    assert.deepEqual(json(await change({ oldPassword: PASSWORD, password: PASSWORD }), 400), failed('password must differ from the current password'));
    assert.deepEqual(json(await change({ oldPassword: PASSWORD, password: 'short' }), 400), failed('password must be 8 to 128 characters'));
    assert.deepEqual(json(await change({ oldPassword: PASSWORD, password: 'qwerty123' }), 400), failed('password is too common; choose another'));
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'sam', PASSWORD))?.id, userId, 'refused changes keep the password');

    assert.deepEqual(json(await change({ username: 'SAM@example.com', oldPassword: PASSWORD, password: 'a new passphrase' }), 200),
      { customerId: app.customer.customerId, status: 'SUCCESS', message: 'Password changed successfully.' });
    assert.equal(await users.verifyCredentials(app.customer.customerId, 'sam', PASSWORD), undefined);
    assert.equal((await users.verifyCredentials(app.customer.customerId, 'sam', 'a new passphrase'))?.id, userId);
    assert.deepEqual(json(await change({ oldPassword: PASSWORD, password: 'yet another one' }), 400), failed('oldPassword is incorrect'));

    assert.deepEqual(json(await change({ username: 'nobody', oldPassword: PASSWORD, password: 'a new passphrase' }), 400), failed('Invalid username or email.'));
    await createUser(app, { username: 'tess', email: 'tess@example.com' });
    assert.deepEqual(json(await change({ username: 'tess', oldPassword: PASSWORD, password: 'a new passphrase' }), 400),
      failed('oldPassword is incorrect'), 'a user without a password has no old password to match');
    // A body the schema refuses gets the validation body (DESIGN.md), like every other route.
    assert.deepEqual(json(await change({ oldPassword: PASSWORD }), 400), validation('password is required'));
  });

  test('group names come in membership order, with quotes, backslashes and non-ASCII text intact', async (t) => {
    const app = await setup(t, kind);
    const names = ['Zeta "quoted"', 'Alpha \\ back', 'Ünïcødé ✓ 😀'];
    await createGroups(app, ...names);
    // Joined last to first, so membership order is neither creation nor alphabetical order.
    await createUser(app, { username: 'olga', email: 'olga@example.com', groups: [...names].reverse().map((name) => ({ name })) });
    const expected = [...names].reverse();
    assert.deepEqual((await getUser(app, 'olga')).users[0].groups, expected);
    assert.deepEqual((await getUser(app, 'olga@example.com')).users[0].groups, expected, 'looked up by e-mail');
    const listed = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200).users;
    assert.deepEqual(listed.find((u: any) => u.username === 'olga').groups, expected);
  });

  test('getall and get records follow every change of a user', async (t) => {
    const app = await setup(t, kind);
    const customerId = app.customer.customerId;
    const { users } = app.composition.services;
    await createGroups(app, 'team');
    await createUser(app, { username: 'una', email: 'una@example.com', password: PASSWORD, customAttribute7: 'seven' });
    await createUser(app, { username: 'vic', email: 'vic@example.com' });

    // Every record of getall is the users/get record of the same user, less `role`; and users/get answers
    // what its includePwdExpDttm variant answers when the customer has no expiry policy.
    const assertListMatchesGet = async (step: string) => {
      const listed = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200).users;
      assert.equal(listed.length, 2, step);
      for (const record of listed) {
        const stored = await getUser(app, record.username);
        const fromRow = json(await app.admin.post('/admin/users/get?includePwdExpDttm=true', { customerKey: app.ck, username: record.username }), 200);
        assert.deepEqual(stored, fromRow, `${step}: ${record.username} (get)`);
        const { role: _role, ...fetched } = stored.users[0];
        assert.deepEqual(record, fetched, `${step}: ${record.username}`);
      }
    };
    await assertListMatchesGet('created');

    app.clock.advance(61_000);
    json(await app.admin.post('/admin/users/update', { customerKey: app.ck, username: 'una', firstName: 'Una B', phone: '+1 555', customAttribute50: 'fifty', groups: [{ name: 'team' }] }), 200);
    await assertListMatchesGet('updated');

    app.clock.advance(61_000);
    json(await app.admin.post('/admin/users/change-password', { customerKey: app.ck, username: 'una', oldPassword: PASSWORD, password: 'a brand new passphrase' }), 200);
    await assertListMatchesGet('password changed');

    app.clock.advance(61_000);
    json(await app.admin.post('/admin/users/disable', { customerKey: app.ck, username: 'vic' }), 200);
    json(await app.admin.post('/admin/groups/members/update', { customerKey: app.ck, groupName: 'team', users: [{ primaryEmail: 'vic@example.com' }] }), 200);
    await assertListMatchesGet('disabled, joined a group');

    const vic = (await users.findByLogin(customerId, 'vic'))!;
    await app.composition.store.db.transaction().execute((trx) => users.setSecondFactorType(trx, customerId, vic.id, 'GOOGLE AUTHENTICATOR'));
    await assertListMatchesGet('second factor');
  });

  test('a user row changed outside the API (an operator job) reads as changed in get and getall', async (t) => {
    const app = await setup(t, kind);
    const { userId } = await createUser(app, { username: 'wes', email: 'wes@example.com' });
    const getall = async () => json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize: 10, batchNo: 1 }), 200);
    // Read once first, so nothing read before the change may be answered after it.
    await getUser(app, 'wes');
    await getall();

    await app.composition.store.db.updateTable('users').set({ first_name: 'Wesley', email_verified: 1, preferred_locale: 'en-GB' })
      .where('customer_id', '=', app.customer.customerId).where('id', '=', userId).execute();
    const changed = { fname: 'Wesley', emailVerified: true, preferredLocale: 'en-GB' };
    const fetched = await getUser(app, 'wes');
    assertGetEnvelope(app, fetched, { userId, username: 'wes', email: 'wes@example.com', record: changed });
    const { role: _role, ...listed } = fetched.users[0];
    assert.deepEqual(await getall(), {
      userId: 0, guid: '', username: '', email: '', status: 'SUCCESS', message: 'Successfully fetched users.', phone: '', authType: '',
      users: [listed], fetchedCount: 1, nextBatch: -1,
    });
  });

  test('deep paging: every batch is exact after deletions in early id blocks', async (t) => {
    const app = await setup(t, kind);
    const other = await app.newCustomer();
    const users = app.composition.services.users;
    const total = 2600;
    const created: { id: number; username: string }[] = [];
    for (let i = 0; i < total; i++) {
      const username = `deep${String(i).padStart(4, '0')}`;
      const user = await users.create(app.customer.customerId, { username, email: `${username}@example.com`, firstName: 'D', lastName: 'P', customAttributes: {} }, SYSTEM);
      created.push({ id: user.id, username });
      // Another customer's users interleave, so this customer's ids are not contiguous.
      if (i % 100 === 0) await users.create(other.customer.customerId, { username, email: `${username}@example.com`, firstName: 'O', lastName: 'C', customAttributes: {} }, SYSTEM);
    }
    assert.deepEqual(created.map((u) => u.id), created.map((u) => u.id).sort((a, b) => a - b), 'creation order is id order');

    // Delete whole and partial early blocks, and a scatter further in.
    const doomed = new Set<string>();
    for (let i = 0; i < 300; i++) doomed.add(created[i].username);
    for (let i = 1000; i < 1100; i++) doomed.add(created[i].username);
    for (let i = 1100; i < total; i += 97) doomed.add(created[i].username);
    for (const username of doomed) await users.remove(app.customer.customerId, username, SYSTEM);
    const expected = created.filter((u) => !doomed.has(u.username)).map((u) => u.username);

    const batch = async (batchNo: number, batchSize: number) => {
      const body = json(await app.admin.post('/admin/users/getall', { customerKey: app.ck, batchSize, batchNo }), 200);
      assert.equal(body.fetchedCount, body.users.length);
      return body as { users: { username: string }[]; nextBatch: number };
    };
    for (const batchSize of [500, 333]) {
      const seen: string[] = [];
      for (let batchNo = 1; ; batchNo++) {
        const body = await batch(batchNo, batchSize);
        seen.push(...body.users.map((u) => u.username));
        assert.equal(body.nextBatch, seen.length < expected.length ? batchNo + 1 : -1, `batch ${batchNo} of ${batchSize}`);
        if (body.nextBatch === -1) break;
      }
      assert.deepEqual(seen, expected, `batchSize ${batchSize}`);
    }
    // Single deep batches straight away, at and around block boundaries.
    for (const [batchNo, batchSize] of [[300, 7], [73, 30], [2, 499], [5, 400], [1, 1], [expected.length, 1], [expected.length + 1, 1]]) {
      const body = await batch(batchNo, batchSize);
      const start = (batchNo - 1) * batchSize;
      assert.deepEqual(body.users.map((u) => u.username), expected.slice(start, start + batchSize), `batch ${batchNo} of ${batchSize}`);
    }
    assert.equal(json(await app.admin.get('/admin/users/stats/count'), 200).data.count, expected.length);
    const otherCount = json(await other.admin.get('/admin/users/stats/count'), 200).data.count;
    assert.equal(otherCount, 26);
  });
});
