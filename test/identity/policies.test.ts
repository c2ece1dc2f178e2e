/**
 * Black-box suite of /admin/policies/create|getall|delete (DESIGN: Admin API extension) on SQLite and
 * PostgreSQL, and the policy resolution the magic-link routes use (findPolicyForUser).
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { build, type AdminClient, type TestApp } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const APP_NOT_FOUND = { status: 'ERROR', code: '404', message: 'The application does not exist.' };
const POLICY_NOT_FOUND = { status: 'ERROR', code: '404', message: 'The policy does not exist.' };
const APP_WIDE_EXISTS = { status: 'ERROR', code: '409', message: 'The application already has an application-wide policy (without groupName).' };

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

async function createApplication(admin: AdminClient, ck: number, name = 'Portal'): Promise<string> {
  const body = json(await admin.post('/admin/applications/create', { customerKey: ck, name, type: 'JWT', returnUrls: ['https://portal.example.com/cb'] }), 200);
  return body.application.applicationUuid;
}

function createPolicy(admin: AdminClient, ck: number, body: Record<string, unknown>) {
  return admin.post('/admin/policies/create', { customerKey: ck, ...body });
}

describeEachStore('login policies API', (kind) => {
  test('create application-wide and group policies: whole bodies; getall lists them in creation order', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const wide = json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK' }), 200);
    assert.equal(typeof wide.policy.policyId, 'number');
    assert.ok(Number.isInteger(wide.policy.policyId) && wide.policy.policyId > 0);
    assert.deepEqual(wide, {
      status: 'SUCCESS',
      policy: { policyId: wide.policy.policyId, applicationUuid: uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE', groupName: '' },
    });
    const staff = json(await createPolicy(app.admin, app.ck, {
      applicationUuid: uuid.toUpperCase(), firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP', groupName: 'Staff',
    }), 200);
    assert.deepEqual(staff, {
      status: 'SUCCESS',
      policy: { policyId: staff.policy.policyId, applicationUuid: uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP', groupName: 'Staff' },
    });
    // null and "" are the application-wide policy too: here, a password policy for another application.
    const other = await createApplication(app.admin, app.ck, 'Other');
    const pw = json(await createPolicy(app.admin, app.ck, { applicationUuid: other, firstFactor: 'PASSWORD', groupName: '' }), 200);
    assert.deepEqual(pw.policy, { policyId: pw.policy.policyId, applicationUuid: other, firstFactor: 'PASSWORD', secondFactor: 'NONE', groupName: '' });
    assert.deepEqual(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200),
      { status: 'SUCCESS', policies: [wide.policy, staff.policy, pw.policy] });
  });

  test('duplicates: a second application-wide policy, or a second one for a group (any case), is 409', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK' }), 200);
    assert.deepEqual(json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'PASSWORD' }), 409), APP_WIDE_EXISTS);
    assert.deepEqual(json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'PASSWORD', groupName: null }), 409), APP_WIDE_EXISTS);
    json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: 'Staff' }), 200);
    assert.deepEqual(json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'PASSWORD', groupName: 'STAFF' }), 409),
      { status: 'ERROR', code: '409', message: 'The application already has a policy for group STAFF.' });
    // The same group on another application is fine.
    const other = await createApplication(app.admin, app.ck, 'Other');
    json(await createPolicy(app.admin, app.ck, { applicationUuid: other, firstFactor: 'MAGIC_LINK', groupName: 'Staff' }), 200);
    assert.equal(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200).policies.length, 3);
  });

  test('concurrent creates of the same policy: exactly one succeeds, the others are 409', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: i % 2 ? 'Staff' : 'staff' })));
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 409, 409, 409, 409, 409]);
    assert.equal(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200).policies.length, 1);
  });

  test('validation 400 naming the field; unknown application 404', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const rows: [Record<string, unknown>, string][] = [
      [{ firstFactor: 'MAGIC_LINK' }, 'applicationUuid is required'],
      [{ applicationUuid: uuid }, 'firstFactor is required'],
      [{ applicationUuid: uuid, firstFactor: 'OTP' }, 'firstFactor must be equal to one of the allowed values'],
      [{ applicationUuid: uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'SMS' }, 'secondFactor must be equal to one of the allowed values'],
      [{ applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: 5 }, 'groupName must be string'],
      [{ applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: 'g'.repeat(101) }, 'groupName must NOT have more than 100 characters'],
      [{ applicationUuid: 'not-a-uuid', firstFactor: 'MAGIC_LINK' }, 'applicationUuid must be a UUID'],
      [{ applicationUuid: uuid, firstFactor: 'magic_link' }, 'firstFactor must be equal to one of the allowed values'],
    ];
    for (const [body, message] of rows) assert.deepEqual(json(await createPolicy(app.admin, app.ck, body), 400), validation(message), JSON.stringify(body));
    assert.deepEqual(json(await createPolicy(app.admin, app.ck, { applicationUuid: '00000000-0000-4000-8000-000000000000', firstFactor: 'MAGIC_LINK' }), 404), APP_NOT_FOUND);
    const POSITIVE = 'policyId must be a positive integer';
    const deleteRows: [unknown, string][] = [
      [undefined, 'policyId is required'], ['abc', POSITIVE], [0, POSITIVE], [-3, POSITIVE], ['0', POSITIVE], ['-1', POSITIVE], ['', POSITIVE],
      ['99999999999999999', POSITIVE], [2 ** 60, POSITIVE], [1.5, 'policyId must be integer'], [true, 'policyId must be integer'],
    ];
    for (const [policyId, message] of deleteRows) {
      assert.deepEqual(json(await app.admin.post('/admin/policies/delete', { customerKey: app.ck, policyId }), 400), validation(message), String(policyId));
    }
    assert.deepEqual(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', policies: [] });
  });

  test('delete by integer or digit string; then 404', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const a = json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK' }), 200).policy;
    const b = json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: 'Staff' }), 200).policy;
    const deleted = { status: 'SUCCESS', message: 'Policy deleted.' };
    assert.deepEqual(json(await app.admin.post('/admin/policies/delete', { customerKey: app.ck, policyId: a.policyId }), 200), deleted);
    assert.deepEqual(json(await app.admin.post('/admin/policies/delete', { customerKey: app.ck, policyId: String(b.policyId) }), 200), deleted);
    assert.deepEqual(json(await app.admin.post('/admin/policies/delete', { customerKey: app.ck, policyId: a.policyId }), 404), POLICY_NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', policies: [] });
    // After a delete, the application-wide slot is free again.
    json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'PASSWORD' }), 200);
  });

  test('tenancy: another customer cannot add a policy to, list or delete the owner\'s', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const mine = json(await createPolicy(app.admin, app.ck, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK' }), 200).policy;
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    assert.deepEqual(json(await createPolicy(other.admin, otherCk, { applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName: 'x' }), 404), APP_NOT_FOUND);
    assert.deepEqual(json(await other.admin.post('/admin/policies/getall', { customerKey: otherCk }), 200), { status: 'SUCCESS', policies: [] });
    assert.deepEqual(json(await other.admin.post('/admin/policies/delete', { customerKey: otherCk, policyId: mine.policyId }), 404), POLICY_NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', policies: [mine] });
  });

  test('/moas/api serves the same routes', async (t) => {
    const app = await setup(t, kind);
    const uuid = await createApplication(app.admin, app.ck);
    const post = (route: string, body: Record<string, unknown>) => app.identity.inject({
      method: 'POST', url: `/moas/api/admin/policies/${route}`,
      headers: { 'content-type': 'application/json', ...app.admin.headers() },
      payload: JSON.stringify({ customerKey: app.ck, ...body }),
    });
    const created = json(await post('create', { applicationUuid: uuid, firstFactor: 'MAGIC_LINK' }), 200);
    assert.deepEqual(json(await post('getall', {}), 200), { status: 'SUCCESS', policies: [created.policy] });
    assert.deepEqual(json(await post('delete', { policyId: created.policy.policyId }), 200), { status: 'SUCCESS', message: 'Policy deleted.' });
  });

  test("findPolicyForUser: one of the user's groups (the oldest when several), else the application-wide one", async (t) => {
    const app = await setup(t, kind);
    const { db } = app.composition.store;
    const { applications, policies } = app.composition.services;
    const customerId = app.customer.customerId;
    const uuid = await createApplication(app.admin, app.ck);
    const otherUuid = await createApplication(app.admin, app.ck, 'Other');
    const applicationId = (await applications.findByUuid(db, customerId, uuid))!.id;
    const find = (groups: string[], appId = applicationId) => policies.findPolicyForUser(db, customerId, appId, groups).then((p) => p?.id);

    assert.equal(await find(['Staff']), undefined);
    const create = async (body: Record<string, unknown>, appUuid = uuid) =>
      json(await createPolicy(app.admin, app.ck, { applicationUuid: appUuid, firstFactor: 'MAGIC_LINK', ...body }), 200).policy.policyId as number;
    const otherStaff = await create({ groupName: 'Staff' }, otherUuid);
    assert.equal(await find(['Staff']), undefined, 'another application\'s policy does not apply');
    const wide = await create({});
    // Groups given as a loader (magic-link generate): read only when the application has a group's policy.
    let loads = 0;
    const loadGroups = (groups: string[]) => async () => { loads++; return groups; };
    assert.equal((await policies.findPolicyForUser(db, customerId, applicationId, loadGroups(['Staff'])))?.id, wide);
    assert.equal(loads, 0, 'no group policy: the groups are not read');
    const admins = await create({ groupName: 'Admins', secondFactor: 'AUTHENTICATOR_APP' });
    const staff = await create({ groupName: 'Staff' });
    assert.equal((await policies.findPolicyForUser(db, customerId, applicationId, loadGroups(['staff'])))?.id, staff);
    assert.equal(loads, 1, 'with group policies the groups are read once');
    assert.equal(await find([]), wide);
    assert.equal(await find(['Sales']), wide);
    assert.equal(await find(['staff']), staff, 'group names match case-insensitively');
    assert.equal(await find(['Staff', 'Admins']), admins, 'the oldest matching policy wins, whatever the order of the groups');
    assert.equal(await find(['Admins', 'Staff']), admins);
    const otherId = (await applications.findByUuid(db, customerId, otherUuid))!.id;
    assert.equal(await find(['Staff'], otherId), otherStaff);
    assert.equal(await find(['Sales'], otherId), undefined);
    const policy = await policies.findPolicyForUser(db, customerId, applicationId, ['ADMINS']);
    assert.deepEqual(policy && { ...policy, createdAt: 0 }, {
      id: admins, customerId, applicationId, applicationUuid: uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP', groupName: 'Admins', createdAt: 0,
    });
    // Another customer's id finds nothing, even with the right application id.
    const other = await app.newCustomer();
    assert.equal(await policies.findPolicyForUser(db, other.customer.customerId, applicationId, ['Staff']), undefined);
  });
});
