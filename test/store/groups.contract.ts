/** The groups repo's contract: names, tenancy, uniqueness, the default group and memberships. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as groups from '../../src/identity/groups/repo.ts';
import { deleteUser } from '../../src/identity/users/repo.ts';
import { isUniqueViolation, type Executor } from '../../src/store/db.ts';
import { NOW, newCustomer, newUser, rejection, type OpenStore } from './fixtures.ts';

const newGroup = (db: Executor, customerId: number, name: string, fields: Partial<Parameters<typeof groups.insertGroup>[2]> = {}) =>
  groups.insertGroup(db, customerId, { name, isDefault: false, isCustomerDefault: false, attributes: {}, now: NOW, ...fields });

const member = (userId: number) => ({ userId, attributes: [] });

export function groupsRepoContract(openStore: OpenStore): void {
  describe('groups repo', () => {
    test('groups are found by name in any case, whole, with their member counts', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const builtIn = await newGroup(db, customerId, 'DEFAULT', { isDefault: true, isCustomerDefault: true });
      const eng = await newGroup(db, customerId, 'Engineering', { attributes: { groupAttribute1: 'one' } });
      const user = await newUser(db, customerId, 'ann');
      await groups.addMembers(db, customerId, eng, [member(user.id)], NOW);
      assert.deepEqual(await groups.findGroupsByNames(db, customerId, [' engineering ', 'nothing']), [{
        id: eng, customerId, name: 'Engineering', isDefault: false, isCustomerDefault: false,
        attributes: { groupAttribute1: 'one' }, memberCount: 1, externalId: null, createdAt: NOW, updatedAt: NOW,
      }]);
      await groups.updateGroup(db, customerId, eng, { attributes: { groupAttribute2: 'two' }, now: NOW + 1 });
      assert.deepEqual((await groups.findGroupsByNames(db, customerId, ['ENGINEERING']))[0].attributes, { groupAttribute2: 'two' });
      assert.deepEqual(await groups.findDefaultGroup(db, customerId), { id: builtIn });
      assert.deepEqual((await groups.listGroupsPage(db, customerId, 0, 10)).map((g) => [g.name, g.memberCount]), [['DEFAULT', 0], ['Engineering', 1]]);
      assert.deepEqual((await groups.listGroupsPage(db, customerId, 1, 10)).map((g) => g.name), ['Engineering']);
    });

    test('a name taken in the customer, in any case, or a second default group is a unique violation', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      await newGroup(db, customerId, 'Sales', { isDefault: true });
      assert.ok(isUniqueViolation(await rejection(newGroup(db, customerId, 'SALES '))), 'name');
      assert.ok(isUniqueViolation(await rejection(newGroup(db, customerId, 'Support', { isDefault: true }))), 'second default');
      assert.deepEqual((await groups.listGroupsPage(db, customerId, 0, 10)).map((g) => g.name), ['Sales']);
    });

    test('a customer never sees or changes another customer\'s groups and memberships', async (t) => {
      const { db } = await openStore(t);
      const a = await newCustomer(db);
      const b = await newCustomer(db);
      const teamA = await newGroup(db, a, 'team', { isDefault: true });
      const teamB = await newGroup(db, b, 'Team');
      const userA = await newUser(db, a, 'ann');
      await groups.addMembers(db, a, teamA, [member(userA.id)], NOW);

      assert.deepEqual((await groups.findGroupsByNames(db, b, ['team'])).map((g) => [g.id, g.memberCount]), [[teamB, 0]]);
      assert.deepEqual(await groups.findDefaultGroup(db, b), undefined);
      assert.deepEqual((await groups.listGroupsPage(db, b, 0, 10)).map((g) => g.id), [teamB]);
      assert.deepEqual(await groups.listMembershipsPage(db, b, 0, 10), []);
      assert.deepEqual(await groups.groupNamesByUser(db, b, [userA.id]), new Map());
      await groups.removeMembers(db, b, teamA, [userA.id]);
      await groups.removeAllMemberships(db, b, userA.id);
      await groups.updateGroup(db, b, teamA, { attributes: { groupAttribute1: 'x' }, now: NOW });
      await groups.setDefaultGroup(db, b, teamA, NOW);
      const [kept] = await groups.findGroupsByNames(db, a, ['team']);
      assert.deepEqual([kept.memberCount, kept.attributes, kept.isDefault], [1, {}, true], 'untouched');
      assert.deepEqual(await groups.findDefaultGroup(db, b), undefined);
    });

    test('memberships are added once, removed, and replaced; names come per user in membership order', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const [red, green, blue] = [await newGroup(db, customerId, 'red'), await newGroup(db, customerId, 'green'), await newGroup(db, customerId, 'blue')];
      const [ann, bob, cat] = [await newUser(db, customerId, 'ann'), await newUser(db, customerId, 'bob'), await newUser(db, customerId, 'cat')];
      await groups.addMembers(db, customerId, blue, [member(ann.id), member(bob.id)], NOW);
      await groups.addMembers(db, customerId, red, [member(ann.id)], NOW);
      await groups.addMembers(db, customerId, blue, [member(ann.id)], NOW + 1);
      const names = (ids: number[]) => groups.groupNamesByUser(db, customerId, ids);
      assert.deepEqual(await names([ann.id, bob.id, cat.id]), new Map([[ann.id, ['blue', 'red']], [bob.id, ['blue']]]));
      assert.deepEqual(await names([ann.id, cat.id]), new Map([[ann.id, ['blue', 'red']]]), 'only the users asked for');
      assert.deepEqual(await names([]), new Map());

      await groups.removeMembers(db, customerId, blue, [ann.id, cat.id]);
      assert.deepEqual(await names([ann.id, bob.id]), new Map([[ann.id, ['red']], [bob.id, ['blue']]]));

      // Replace, as a user update does: all memberships out, the new ones in, in the order given.
      await db.transaction().execute(async (trx) => {
        await groups.removeAllMemberships(trx, customerId, ann.id);
        for (const groupId of [green, blue]) await groups.addMembers(trx, customerId, groupId, [member(ann.id)], NOW + 2);
      });
      assert.deepEqual(await names([ann.id]), new Map([[ann.id, ['green', 'blue']]]));
      assert.deepEqual((await groups.listGroupsPage(db, customerId, 0, 10)).map((g) => [g.name, g.memberCount]), [['red', 0], ['green', 1], ['blue', 2]]);
      assert.deepEqual(await groups.listMembershipsPage(db, customerId, 0, 10), [
        { primaryEmail: 'bob@example.com', groupName: 'blue', createdAt: NOW, updatedAt: NOW },
        { primaryEmail: 'ann@example.com', groupName: 'green', createdAt: NOW + 2, updatedAt: NOW + 2 },
        { primaryEmail: 'ann@example.com', groupName: 'blue', createdAt: NOW + 2, updatedAt: NOW + 2 },
      ]);
      assert.deepEqual((await groups.listMembershipsPage(db, customerId, 2, 10)).map((m) => m.groupName), ['blue']);

      await deleteUser(db, customerId, ann.id);
      assert.deepEqual(await groups.listMembershipsPage(db, customerId, 0, 10), [{ primaryEmail: 'bob@example.com', groupName: 'blue', createdAt: NOW, updatedAt: NOW }]);
    });

    test('the default flag moves to one group at a time and falls back to the built-in group', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const builtIn = await newGroup(db, customerId, 'DEFAULT', { isDefault: true, isCustomerDefault: true });
      const eng = await newGroup(db, customerId, 'eng');
      const ops = await newGroup(db, customerId, 'ops');
      const defaults = async () => (await groups.listGroupsPage(db, customerId, 0, 10)).filter((g) => g.isDefault).map((g) => g.id);

      await groups.setDefaultGroup(db, customerId, eng, NOW + 1);
      assert.deepEqual(await defaults(), [eng]);
      assert.deepEqual(await groups.findDefaultGroup(db, customerId), { id: eng });
      await groups.unsetDefaultGroup(db, customerId, ops, NOW + 2);
      assert.deepEqual(await defaults(), [eng], 'unsetting a group that is not the default changes nothing');
      await groups.unsetDefaultGroup(db, customerId, eng, NOW + 3);
      assert.deepEqual(await defaults(), [builtIn]);
      await groups.unsetDefaultGroup(db, customerId, builtIn, NOW + 4);
      assert.deepEqual(await defaults(), [builtIn], 'the built-in group stays default when nothing else is');
    });

    test('search by any part of the name (LIKE\'s own characters literal), count, rename, delete, find by id, in the customer only', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const other = await newCustomer(db);
      for (const name of ['Red team', 'blue_team', '100% club', 'Purple', 'back\\slash']) await newGroup(db, customerId, name);
      await newGroup(db, other, 'Other team');
      const search = async (text: string, offset = 0, limit = 10) => (await groups.searchGroupsPage(db, customerId, text, offset, limit)).map((g) => g.name);
      assert.deepEqual(await search(''), ['100% club', 'back\\slash', 'blue_team', 'Purple', 'Red team'], 'by name, any case');
      assert.deepEqual(await search('TEAM'), ['blue_team', 'Red team']);
      assert.deepEqual(await search('_'), ['blue_team']);
      assert.deepEqual(await search('%'), ['100% club']);
      assert.deepEqual(await search('\\'), ['back\\slash']);
      assert.deepEqual(await search('', 1, 2), ['back\\slash', 'blue_team']);
      assert.deepEqual([await groups.countGroups(db, customerId, ''), await groups.countGroups(db, customerId, 'team'), await groups.countGroups(db, other, '')], [5, 2, 1]);

      const [red] = await groups.findGroupsByNames(db, customerId, ['red team']);
      await groups.renameGroup(db, customerId, red!.id, 'Crimson', NOW + 1);
      assert.deepEqual(await groups.findGroupById(db, customerId, red!.id), { ...red, name: 'Crimson', updatedAt: NOW + 1 });
      assert.equal(await groups.findGroupById(db, other, red!.id), undefined);
      assert.ok(isUniqueViolation(await rejection(groups.renameGroup(db, customerId, red!.id, 'PURPLE', NOW))), 'a taken name');
      await groups.renameGroup(db, other, red!.id, 'stolen', NOW);
      await groups.deleteGroup(db, other, red!.id);
      assert.equal((await groups.findGroupById(db, customerId, red!.id))?.name, 'Crimson', 'another customer changes nothing');
      const user = await newUser(db, customerId, 'ann');
      await groups.addMembers(db, customerId, red!.id, [member(user.id)], NOW);
      await groups.deleteGroup(db, customerId, red!.id);
      assert.equal(await groups.findGroupById(db, customerId, red!.id), undefined);
      assert.deepEqual(await groups.groupNamesByUser(db, customerId, [user.id]), new Map(), 'its memberships go with it');
    });
  });
}
