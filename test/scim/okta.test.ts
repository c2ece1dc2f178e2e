/**
 * Okta's provisioning conversation replayed with the request bodies its documentation publishes
 * (developer.okta.com "SCIM 2.0 protocol reference" and the Runscope/"SCIM 2.0 test spec" sequence):
 * the userName probe, create, read, replace, deactivate and reactivate by PATCH without a path, a
 * password sync, delete; group push: create, rename by a pathless replace carrying the id, member add
 * and remove by filter, delete. Every answer's status and body, and the effect through the admin API.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import {
  adminGroupNames, adminMemberships, adminUser, auditTrail, buildScim, groupResource, listOf, PATCH_SCHEMA, replay, userResource,
  type ReplayStep, type ScimApp,
} from './helpers.ts';

interface Ctx { app: ScimApp; userId: string; groupId: string; defaultGroupId: number; at: number }

const OKTA_USER_NAME = 'test.user@okta.local';

/** The user as the service provider answers it after `changes`. */
const oktaUser = (ctx: Ctx, changes: { givenName?: string; active?: boolean } = {}) => userResource({
  id: ctx.userId, userName: OKTA_USER_NAME, givenName: changes.givenName ?? 'Test', familyName: 'User', email: OKTA_USER_NAME,
  active: changes.active ?? true, externalId: '00ujl29u0le5T6Aj10h7', groups: [{ id: ctx.defaultGroupId, name: 'DEFAULT' }], createdAt: ctx.at,
});

const users = () => ctx.app.composition.services.users;
let ctx: Ctx;

const userSteps: ReplayStep<Ctx>[] = [
  {
    name: 'the userName probe finds nobody',
    method: 'GET', path: () => `/Users?filter=${encodeURIComponent(`userName eq "${OKTA_USER_NAME}"`)}&startIndex=1&count=100`,
    status: 200, expect: () => listOf([]),
  },
  {
    name: 'create',
    method: 'POST', path: () => '/Users',
    body: () => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: OKTA_USER_NAME,
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: OKTA_USER_NAME, type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    }),
    status: 201, keep: (c, body) => { c.userId = body.id as string; }, expect: (c) => oktaUser(c),
    effect: async (c) => {
      const record = await adminUser(c.app, OKTA_USER_NAME);
      assert.equal(record?.fname, 'Test');
      assert.equal(record?.lname, 'User');
      assert.equal(record?.primaryEmail, OKTA_USER_NAME);
      assert.equal(record?.guid, c.userId, 'the SCIM id is the guid');
      assert.deepEqual(record?.groups, ['DEFAULT']);
      assert.ok(await users().verifyCredentials(c.app.customer.customerId, OKTA_USER_NAME, '1mz050nq'), 'the synced password signs in');
    },
  },
  {
    name: 'the userName probe finds the user',
    method: 'GET', path: () => `/Users?filter=${encodeURIComponent(`userName eq "${OKTA_USER_NAME}"`)}&startIndex=1&count=100`,
    status: 200, expect: (c) => listOf([oktaUser(c)]),
  },
  { name: 'read', method: 'GET', path: (c) => `/Users/${c.userId}`, status: 200, expect: (c) => oktaUser(c) },
  {
    name: 'replace (PUT)',
    method: 'PUT', path: (c) => `/Users/${c.userId}`,
    body: (c) => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      id: c.userId,
      userName: OKTA_USER_NAME,
      name: { givenName: 'Another', familyName: 'User' },
      emails: [{ primary: true, value: OKTA_USER_NAME, type: 'work' }],
      displayName: 'Another User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      active: true,
      meta: { resourceType: 'User', created: '2022-04-12T18:21:05.000Z', lastModified: '2022-04-12T18:21:05.000Z' },
    }),
    status: 200, expect: (c) => oktaUser(c, { givenName: 'Another' }),
    effect: async (c) => assert.equal((await adminUser(c.app, OKTA_USER_NAME))?.fname, 'Another'),
  },
  {
    name: 'deactivate',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: () => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', value: { active: false } }] }),
    status: 200, expect: (c) => oktaUser(c, { givenName: 'Another', active: false }),
    effect: async (c) => {
      assert.equal((await users().findByLogin(c.app.customer.customerId, OKTA_USER_NAME))?.isDisabled, true);
      assert.equal(await users().verifyCredentials(c.app.customer.customerId, OKTA_USER_NAME, '1mz050nq'), undefined, 'a disabled user signs nobody in');
    },
  },
  {
    name: 'reactivate',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: () => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', value: { active: true } }] }),
    status: 200, expect: (c) => oktaUser(c, { givenName: 'Another', active: true }),
    effect: async (c) => assert.equal((await users().findByLogin(c.app.customer.customerId, OKTA_USER_NAME))?.isDisabled, false),
  },
  {
    name: 'password sync',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: () => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', value: { password: 't1meMa$heen' } }] }),
    status: 200, expect: (c) => oktaUser(c, { givenName: 'Another' }),
    effect: async (c) => {
      assert.ok(await users().verifyCredentials(c.app.customer.customerId, OKTA_USER_NAME, 't1meMa$heen'));
      assert.equal(await users().verifyCredentials(c.app.customer.customerId, OKTA_USER_NAME, '1mz050nq'), undefined);
    },
  },
];

const groupSteps: ReplayStep<Ctx>[] = [
  {
    name: 'the displayName probe finds no group',
    method: 'GET', path: () => `/Groups?filter=${encodeURIComponent('displayName eq "Test SCIMv2"')}&startIndex=1&count=100`,
    status: 200, expect: () => listOf([]),
  },
  {
    name: 'push a group',
    method: 'POST', path: () => '/Groups',
    body: () => ({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Test SCIMv2', members: [] }),
    status: 201, keep: (c, body) => { c.groupId = body.id as string; },
    expect: (c) => groupResource({ id: c.groupId, displayName: 'Test SCIMv2', members: [], createdAt: c.at }),
    effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['DEFAULT', 'Test SCIMv2']),
  },
  {
    name: 'read the group',
    method: 'GET', path: (c) => `/Groups/${c.groupId}`,
    status: 200, expect: (c) => groupResource({ id: c.groupId, displayName: 'Test SCIMv2', members: [], createdAt: c.at }),
  },
  {
    name: 'rename by a replace without a path, carrying the id',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: (c) => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', value: { id: c.groupId, displayName: 'Test SCIMv2 Renamed' } }] }),
    status: 204, effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['DEFAULT', 'Test SCIMv2 Renamed']),
  },
  {
    name: 'add a member',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: (c) => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'add', path: 'members', value: [{ value: c.userId, display: OKTA_USER_NAME }] }] }),
    status: 204,
    effect: async (c) => assert.deepEqual(await adminMemberships(c.app), [`DEFAULT: ${OKTA_USER_NAME}`, `Test SCIMv2 Renamed: ${OKTA_USER_NAME}`]),
  },
  {
    name: 'the group shows its member',
    method: 'GET', path: (c) => `/Groups/${c.groupId}`,
    status: 200,
    expect: (c) => groupResource({ id: c.groupId, displayName: 'Test SCIMv2 Renamed', members: [{ id: c.userId, userName: OKTA_USER_NAME }], createdAt: c.at }),
  },
  {
    name: 'remove the member by filter',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: (c) => ({ schemas: [PATCH_SCHEMA], Operations: [{ op: 'remove', path: `members[value eq "${c.userId}"]` }] }),
    status: 204, effect: async (c) => assert.deepEqual(await adminMemberships(c.app), [`DEFAULT: ${OKTA_USER_NAME}`]),
  },
  {
    name: 'delete the group',
    method: 'DELETE', path: (c) => `/Groups/${c.groupId}`,
    status: 204, effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['DEFAULT']),
  },
  { name: 'the group is gone', method: 'GET', path: (c) => `/Groups/${c.groupId}`, status: 404 },
  {
    name: 'delete the user',
    method: 'DELETE', path: (c) => `/Users/${c.userId}`,
    status: 204, effect: async (c) => assert.equal(await adminUser(c.app, OKTA_USER_NAME), undefined),
  },
  { name: 'the user is gone', method: 'GET', path: (c) => `/Users/${c.userId}`, status: 404 },
];

describeEachStore('SCIM: Okta\'s provisioning conversation', (kind) => {
  test('users then group push, each answer as RFC 7644 says, each effect seen by the admin API; audited as scim', async (t) => {
    const app = await buildScim(t, kind);
    const defaultGroup = await app.composition.services.groups.findByName(app.customer.customerId, 'DEFAULT');
    ctx = { app, userId: '', groupId: '', defaultGroupId: defaultGroup!.id, at: app.clock.now() };
    await replay(app.scim, ctx, [...userSteps, ...groupSteps], assert);
    const actor = `scim:${app.scim.tokenId}`;
    assert.deepEqual((await auditTrail(app)).filter((line) => !line.startsWith('scimtoken.')), [
      `user.created ${actor} ${OKTA_USER_NAME}`,
      `user.updated ${actor} ${OKTA_USER_NAME}`,
      `user.disabled ${actor} ${OKTA_USER_NAME}`,
      `user.enabled ${actor} ${OKTA_USER_NAME}`,
      `user.updated ${actor} ${OKTA_USER_NAME}`,
      `group.updated ${actor} Test SCIMv2`,
      `group.updated ${actor} Test SCIMv2 Renamed`,
      `group.members.updated ${actor} Test SCIMv2 Renamed`,
      `group.members.updated ${actor} Test SCIMv2 Renamed`,
      `group.deleted ${actor} Test SCIMv2 Renamed`,
      `user.deleted ${actor} ${OKTA_USER_NAME}`,
    ]);
  });
});
