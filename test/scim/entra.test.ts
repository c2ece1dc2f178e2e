/**
 * Microsoft Entra ID's provisioning conversation replayed with the request bodies its documentation
 * publishes ("Tutorial: Develop and plan provisioning for a SCIM endpoint in Microsoft Entra ID"):
 * the userName probe for a user that does not exist, create with the enterprise extension, read,
 * PATCH with capitalised operations ("Replace", "Add"), emails[type eq "work"].value, string
 * booleans ("False", "True"), the userName update it sends (refused: usernames never change),
 * disable, delete; groups: create (with and without members), read and probe without members,
 * rename, member add and remove with "$ref": null, delete. Status, body and admin-API effect of each.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import {
  adminGroupNames, adminMemberships, adminUser, auditTrail, buildScim, groupResource, listOf, PATCH_SCHEMA, replay, scimError, userResource,
  type ReplayStep, type ScimApp,
} from './helpers.ts';

interface Ctx { app: ScimApp; userId: string; groupId: string; secondGroupId: string; defaultGroupId: number; at: number }

const USER_NAME = 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1';
const EMAIL = 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com';
const UPDATED_EMAIL = 'updatedEmail@microsoft.com';

const entraUser = (c: Ctx, changes: { email?: string; familyName?: string; active?: boolean; phone?: string } = {}) => userResource({
  id: c.userId, userName: USER_NAME, givenName: 'givenName', familyName: changes.familyName ?? 'familyName', email: changes.email ?? EMAIL,
  active: changes.active ?? true, externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef', phone: changes.phone,
  groups: [{ id: c.defaultGroupId, name: 'DEFAULT' }], createdAt: c.at,
});

const isDisabled = async (c: Ctx) => (await c.app.composition.services.users.findByLogin(c.app.customer.customerId, USER_NAME))?.isDisabled;

const patch = (...operations: unknown[]) => () => ({ schemas: [PATCH_SCHEMA], Operations: operations });

const userSteps: ReplayStep<Ctx>[] = [
  {
    name: 'probe: a user that does not exist',
    method: 'GET', path: () => `/Users?filter=${encodeURIComponent('userName eq "non-existent user"')}`,
    status: 200, expect: () => listOf([]),
  },
  {
    name: 'create with the enterprise extension',
    method: 'POST', path: () => '/Users',
    body: () => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName: USER_NAME,
      active: true,
      emails: [{ primary: true, type: 'work', value: EMAIL }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '701984', department: 'Tour Operations', manager: { value: '26118915-6090-4610-87e4-49d8ca9f808d' } },
    }),
    status: 201, keep: (c, body) => { c.userId = body.id as string; }, expect: (c) => entraUser(c),
    effect: async (c) => {
      const record = await adminUser(c.app, USER_NAME);
      assert.deepEqual([record?.fname, record?.lname, record?.primaryEmail, record?.guid], ['givenName', 'familyName', EMAIL, c.userId]);
    },
  },
  { name: 'read', method: 'GET', path: (c) => `/Users/${c.userId}`, status: 200, expect: (c) => entraUser(c) },
  {
    name: 'probe: the user by userName',
    method: 'GET', path: () => `/Users?filter=${encodeURIComponent(`userName eq "${USER_NAME}"`)}`,
    status: 200, expect: (c) => listOf([entraUser(c)]),
  },
  {
    name: 'update multi-valued: Replace emails[type eq "work"].value and name.familyName',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch(
      { op: 'Replace', path: 'emails[type eq "work"].value', value: UPDATED_EMAIL },
      { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
    ),
    status: 200, expect: (c) => entraUser(c, { email: UPDATED_EMAIL, familyName: 'updatedFamilyName' }),
    effect: async (c) => {
      const record = await adminUser(c.app, USER_NAME);
      assert.deepEqual([record?.primaryEmail, record?.lname], [UPDATED_EMAIL, 'updatedFamilyName']);
    },
  },
  {
    name: 'update single-valued userName: refused, usernames never change',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch({ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }),
    status: 400, expect: () => scimError(400, 'userName cannot change', 'mutability'),
    effect: async (c) => assert.ok(await adminUser(c.app, USER_NAME), 'still found by its username'),
  },
  {
    name: 'Add a work phone by filter (the entry is created)',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch({ op: 'Add', path: 'phoneNumbers[type eq "work"].value', value: '+1 555 0100' }),
    status: 200, expect: (c) => entraUser(c, { email: UPDATED_EMAIL, familyName: 'updatedFamilyName', phone: '+1 555 0100' }),
    effect: async (c) => assert.equal((await adminUser(c.app, USER_NAME))?.primaryPhone, '+1 555 0100'),
  },
  {
    name: 'disable with the string "False"',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch({ op: 'Replace', path: 'active', value: 'False' }),
    status: 200, expect: (c) => entraUser(c, { email: UPDATED_EMAIL, familyName: 'updatedFamilyName', phone: '+1 555 0100', active: false }),
    effect: async (c) => assert.equal(await isDisabled(c), true),
  },
  {
    name: 'enable with "True"',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch({ op: 'Replace', path: 'active', value: 'True' }),
    status: 200, expect: (c) => entraUser(c, { email: UPDATED_EMAIL, familyName: 'updatedFamilyName', phone: '+1 555 0100', active: true }),
    effect: async (c) => assert.equal(await isDisabled(c), false),
  },
  {
    name: 'disable as documented (a boolean), with an ignored enterprise attribute beside it',
    method: 'PATCH', path: (c) => `/Users/${c.userId}`,
    body: patch(
      { op: 'Replace', path: 'active', value: false },
      { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Sales' },
    ),
    status: 200, expect: (c) => entraUser(c, { email: UPDATED_EMAIL, familyName: 'updatedFamilyName', phone: '+1 555 0100', active: false }),
    effect: async (c) => assert.equal(await isDisabled(c), true),
  },
];

const groupSteps: ReplayStep<Ctx>[] = [
  {
    name: 'create a group',
    method: 'POST', path: () => '/Groups',
    body: () => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group', 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    }),
    status: 201, keep: (c, body) => { c.groupId = body.id as string; },
    expect: (c) => groupResource({ id: c.groupId, displayName: 'displayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', members: [], createdAt: c.at }),
    effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['DEFAULT', 'displayName']),
  },
  {
    name: 'create a group with members',
    method: 'POST', path: () => '/Groups',
    body: (c) => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      externalId: '60f1bb27-2e1e-402d-bcc4-ec999564a194',
      displayName: 'Group with members',
      members: [{ value: c.userId }],
    }),
    status: 201, keep: (c, body) => { c.secondGroupId = body.id as string; },
    expect: (c) => groupResource({
      id: c.secondGroupId, displayName: 'Group with members', externalId: '60f1bb27-2e1e-402d-bcc4-ec999564a194',
      members: [{ id: c.userId, userName: USER_NAME }], createdAt: c.at,
    }),
    effect: async (c) => assert.deepEqual(await adminMemberships(c.app), [`DEFAULT: ${UPDATED_EMAIL}`, `Group with members: ${UPDATED_EMAIL}`]),
  },
  {
    name: 'read without members',
    method: 'GET', path: (c) => `/Groups/${c.groupId}?excludedAttributes=members`,
    status: 200, expect: (c) => groupResource({ id: c.groupId, displayName: 'displayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', createdAt: c.at }),
  },
  {
    name: 'probe by displayName without members',
    method: 'GET', path: () => `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`,
    status: 200, expect: (c) => listOf([groupResource({ id: c.groupId, displayName: 'displayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', createdAt: c.at })]),
  },
  {
    name: 'rename (Replace displayName)',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: patch({ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }),
    status: 204,
    effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName', 'DEFAULT', 'Group with members']),
  },
  {
    name: 'Add a member ("$ref": null)',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: (c) => patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: c.userId }] })(),
    status: 204,
    effect: async (c) => assert.deepEqual(await adminMemberships(c.app), [
      `1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName: ${UPDATED_EMAIL}`, `DEFAULT: ${UPDATED_EMAIL}`, `Group with members: ${UPDATED_EMAIL}`,
    ]),
  },
  {
    name: 'Remove the member ("$ref": null)',
    method: 'PATCH', path: (c) => `/Groups/${c.groupId}`,
    body: (c) => patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: c.userId }] })(),
    status: 204,
    effect: async (c) => assert.deepEqual(await adminMemberships(c.app), [`DEFAULT: ${UPDATED_EMAIL}`, `Group with members: ${UPDATED_EMAIL}`]),
  },
  {
    name: 'delete the group',
    method: 'DELETE', path: (c) => `/Groups/${c.groupId}`,
    status: 204, effect: async (c) => assert.deepEqual(await adminGroupNames(c.app), ['DEFAULT', 'Group with members']),
  },
  {
    name: 'delete the user (their memberships go with them)',
    method: 'DELETE', path: (c) => `/Users/${c.userId}`,
    status: 204,
    effect: async (c) => {
      assert.equal(await adminUser(c.app, USER_NAME), undefined);
      assert.deepEqual(await adminMemberships(c.app), []);
    },
  },
  { name: 'the user is gone', method: 'GET', path: (c) => `/Users/${c.userId}`, status: 404, expect: () => scimError(404, 'The user does not exist.') },
];

describeEachStore('SCIM: Entra ID\'s provisioning conversation', (kind) => {
  test('users then groups, each answer as RFC 7644 says, each effect seen by the admin API; audited as scim', async (t) => {
    const app = await buildScim(t, kind);
    const defaultGroup = await app.composition.services.groups.findByName(app.customer.customerId, 'DEFAULT');
    const ctx: Ctx = { app, userId: '', groupId: '', secondGroupId: '', defaultGroupId: defaultGroup!.id, at: app.clock.now() };
    await replay(app.scim, ctx, [...userSteps, ...groupSteps], assert);
    const actor = `scim:${app.scim.tokenId}`;
    const renamed = '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName';
    assert.deepEqual((await auditTrail(app)).filter((line) => !line.startsWith('scimtoken.')), [
      `user.created ${actor} ${USER_NAME}`,
      `user.updated ${actor} ${USER_NAME}`,
      `user.updated ${actor} ${USER_NAME}`,
      `user.disabled ${actor} ${USER_NAME}`,
      `user.enabled ${actor} ${USER_NAME}`,
      `user.disabled ${actor} ${USER_NAME}`,
      `group.updated ${actor} displayName`,
      `group.updated ${actor} Group with members`,
      `group.members.updated ${actor} Group with members`,
      `group.updated ${actor} ${renamed}`,
      `group.members.updated ${actor} ${renamed}`,
      `group.members.updated ${actor} ${renamed}`,
      `group.deleted ${actor} ${renamed}`,
      `user.deleted ${actor} ${USER_NAME}`,
    ]);
  });
});
