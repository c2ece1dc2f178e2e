/** The users repo's contract: lookups, tenancy, uniqueness, writes, deletion and deep paging. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as groups from '../../src/identity/groups/repo.ts';
import * as users from '../../src/identity/users/repo.ts';
import { isUniqueViolation } from '../../src/store/db.ts';
import { NOW, newCustomer, newUser, rejection, type OpenStore } from './fixtures.ts';

export function usersRepoContract(openStore: OpenStore): void {
  describe('users repo', () => {
    test('a created user reads back whole, by id and by username or e-mail in any case', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const ada = await newUser(db, customerId, 'Ada', {
        email: 'Ada.L@Example.com', firstName: 'Ada', lastName: 'Lovelace', phone: '+44 1', passwordHash: 'hash-1',
        customAttributes: { customAttribute1: 'one', customAttribute50: 'fifty' },
      });
      assert.deepEqual(ada, {
        id: ada.id, customerId, guid: ada.guid, username: 'Ada', email: 'Ada.L@Example.com', firstName: 'Ada', lastName: 'Lovelace',
        phone: '+44 1', alternateEmail: '', hasPassword: true, passwordChangedAt: NOW, role: 'END_USER', isDisabled: false,
        markForDeletion: false, idpEnabled: false, phoneVerified: false, emailVerified: false, preferredLocale: '',
        enforce2faOnNextLogin: false, sourceType: 'API', sourceIdentifier: '', lastVerifiedAt: 0, secondFactorType: 'NONE',
        customAttributes: { customAttribute1: 'one', customAttribute50: 'fifty' }, credentialsVersion: 1, passwordChangeRequired: false, externalId: null, createdAt: NOW, updatedAt: NOW,
      });
      assert.deepEqual(await users.findUserById(db, customerId, ada.id), ada);
      for (const login of ['ada', 'ADA', '  Ada ', 'ada.l@example.com', 'ADA.L@EXAMPLE.COM']) {
        assert.deepEqual(await users.findUsersByLogin(db, customerId, login), [ada], login);
      }
      assert.deepEqual(await users.findUserByUsername(db, customerId, 'aDa'), ada);
      assert.equal(await users.findUserByUsername(db, customerId, 'ada.l@example.com'), undefined, 'by username only');
      assert.deepEqual(await users.findUsersByEmails(db, customerId, ['ADA.l@example.com', 'nobody@example.com']), [ada]);
      assert.deepEqual(await users.findUsersByLogin(db, customerId, 'nobody'), []);
      assert.equal(await users.findPasswordHash(db, customerId, ada.id), 'hash-1');
    });

    test('a login that is one user\'s username and another\'s e-mail finds both; a username that is its own e-mail finds one', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const byName = await newUser(db, customerId, 'bo@example.com');
      const other = await newUser(db, customerId, 'robert', { email: 'Bo@Example.org' });
      const third = await newUser(db, customerId, 'bo@example.org', { email: 'third@example.com' });
      assert.deepEqual(await users.findUsersByLogin(db, customerId, 'BO@example.com'), [byName]);
      assert.deepEqual((await users.findUsersByLogin(db, customerId, 'bo@example.org')).map((u) => u.id).sort(), [other.id, third.id].sort());
    });

    test('a customer never sees, changes or deletes another customer\'s users', async (t) => {
      const { db } = await openStore(t);
      const a = await newCustomer(db);
      const b = await newCustomer(db);
      const samA = await newUser(db, a, 'sam');
      const samB = await newUser(db, b, 'sam', { firstName: 'Other' });
      assert.notEqual(samA.id, samB.id, 'one username in two customers');
      const onlyA = await newUser(db, a, 'alone');

      assert.deepEqual(await users.findUsersByLogin(db, b, 'sam'), [samB]);
      assert.deepEqual(await users.findUsersByLogin(db, b, 'alone'), []);
      assert.equal(await users.findUserById(db, b, onlyA.id), undefined);
      assert.equal(await users.findUserByUsername(db, b, 'alone'), undefined);
      assert.deepEqual(await users.findUsersByEmails(db, b, ['alone@example.com', 'sam@example.com']), [samB]);
      assert.equal(await users.findPasswordHash(db, b, onlyA.id), null);
      assert.equal(await users.updateUser(db, b, onlyA.id, { firstName: 'Hijacked', now: NOW + 1 }), undefined);
      assert.equal(await users.lockUser(db, b, onlyA.id), undefined);
      assert.equal(await users.deleteUser(db, b, onlyA.id), false);
      assert.deepEqual(await users.findUserById(db, a, onlyA.id), onlyA, 'unchanged');
      assert.deepEqual((await users.listUsersPage(db, a, 0, 10)).map((u) => u.username), ['sam', 'alone']);
      assert.deepEqual(await users.listUsersPage(db, b, 0, 10), [samB]);
      assert.equal(await users.countUsers(db, a), 2);
      assert.equal(await users.countUsers(db, b), 1);
    });

    test('a username or e-mail taken in the customer, in any case, is a unique violation', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      await newUser(db, customerId, 'kim', { email: 'kim@example.com' });
      assert.ok(isUniqueViolation(await rejection(newUser(db, customerId, ' KIM', { email: 'other@example.com' }))), 'username');
      assert.ok(isUniqueViolation(await rejection(newUser(db, customerId, 'kimberly', { email: 'Kim@Example.COM' }))), 'e-mail');
      const lee = await newUser(db, customerId, 'lee');
      assert.ok(isUniqueViolation(await rejection(users.updateUser(db, customerId, lee.id, { email: 'KIM@example.com', now: NOW }))), 'e-mail on update');
      assert.deepEqual((await users.listUsersPage(db, customerId, 0, 10)).map((u) => u.username), ['kim', 'lee'], 'nothing half-made');
      assert.equal(await users.countUsers(db, customerId), 2);
    });

    test('updates change what they name; a password is replaced only while it is the expected one', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const user = await newUser(db, customerId, 'max', { passwordHash: 'old' });
      const updated = await users.updateUser(db, customerId, user.id, {
        email: 'MAX@example.org', phone: '+1 2', customAttributes: { customAttribute2: 'two' }, isDisabled: true, bumpCredentials: true,
        secondFactorType: 'GOOGLE AUTHENTICATOR', now: NOW + 60_000,
      });
      const expected = {
        ...user, email: 'MAX@example.org', phone: '+1 2', customAttributes: { customAttribute2: 'two' }, isDisabled: true,
        credentialsVersion: 2, secondFactorType: 'GOOGLE AUTHENTICATOR', updatedAt: NOW + 60_000,
      };
      assert.deepEqual(updated, expected);
      assert.deepEqual(await users.findUserById(db, customerId, user.id), expected);
      assert.deepEqual(await users.findUsersByLogin(db, customerId, 'max@EXAMPLE.org'), [expected], 'found by the new e-mail');
      assert.deepEqual(await users.findUsersByLogin(db, customerId, 'max@example.com'), [], 'not by the old one');
      assert.deepEqual(await db.transaction().execute((trx) => users.lockUser(trx, customerId, user.id)), expected);

      assert.equal(await users.replacePasswordHash(db, customerId, user.id, 'old', 'new', NOW + 120_000), true);
      assert.equal(await users.replacePasswordHash(db, customerId, user.id, 'old', 'newer', NOW + 180_000), false, 'stale expectation');
      assert.equal(await users.findPasswordHash(db, customerId, user.id), 'new');
      assert.deepEqual(await users.findUserById(db, customerId, user.id), { ...expected, passwordChangedAt: NOW + 120_000, credentialsVersion: 3, updatedAt: NOW + 120_000 });
    });

    test('deleting a user deletes them once, with their memberships; count leaves out users marked for deletion', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const groupId = await groups.insertGroup(db, customerId, { name: 'team', isDefault: false, isCustomerDefault: false, attributes: {}, now: NOW });
      const [gone, kept, marked] = [await newUser(db, customerId, 'gone'), await newUser(db, customerId, 'kept'), await newUser(db, customerId, 'marked')];
      await groups.addMembers(db, customerId, groupId, [gone, kept].map((u) => ({ userId: u.id, attributes: [] })), NOW);
      await db.updateTable('users').set({ mark_for_deletion: 1 }).where('id', '=', marked.id).execute();
      assert.equal(await users.countUsers(db, customerId), 2);

      assert.equal(await users.deleteUser(db, customerId, gone.id), true);
      assert.equal(await users.deleteUser(db, customerId, gone.id), false, 'already gone');
      assert.equal(await users.findUserById(db, customerId, gone.id), undefined);
      assert.deepEqual(await users.findUsersByLogin(db, customerId, 'gone'), []);
      assert.deepEqual((await users.listUsersPage(db, customerId, 0, 10)).map((u) => u.username), ['kept', 'marked']);
      assert.equal(await users.countUsers(db, customerId), 1);
      assert.deepEqual([...(await groups.groupNamesByUser(db, customerId, [gone.id, kept.id]))], [[kept.id, ['team']]]);
      assert.equal((await groups.findGroupsByNames(db, customerId, ['team']))[0].memberCount, 1);
      // The name is free again.
      await newUser(db, customerId, 'gone');
    });

    test('deleting a customer deletes its users, groups and memberships', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const user = await newUser(db, customerId, 'cy');
      const groupId = await groups.insertGroup(db, customerId, { name: 'team', isDefault: false, isCustomerDefault: false, attributes: {}, now: NOW });
      await groups.addMembers(db, customerId, groupId, [{ userId: user.id, attributes: [] }], NOW);
      await db.deleteFrom('customers').where('id', '=', customerId).execute();
      assert.equal(await users.findUserById(db, customerId, user.id), undefined);
      assert.deepEqual(await groups.findGroupsByNames(db, customerId, ['team']), []);
      assert.deepEqual(await groups.listMembershipsPage(db, customerId, 0, 10), []);
      assert.equal(await users.countUsers(db, customerId), 0);
    });

    test('pages follow creation order exactly, deep batches included, across id blocks and deletions', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const other = await newCustomer(db);
      const created: string[] = [];
      const ids = new Map<string, number>();
      // More users than one id block (1024 ids) holds, with another customer's users in between.
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 1300; i++) {
          const username = `p${String(i).padStart(4, '0')}`;
          ids.set(username, (await newUser(trx, customerId, username)).id);
          created.push(username);
          if (i % 10 === 0) await newUser(trx, other, username);
        }
      });
      const doomed = new Set([...created.slice(0, 60), ...created.slice(500, 800).filter((_, i) => i % 7 === 0), created[1299]]);
      for (const username of doomed) assert.equal(await users.deleteUser(db, customerId, ids.get(username)!), true);
      const expected = created.filter((u) => !doomed.has(u));
      const page = async (offset: number, limit: number) => (await users.listUsersPage(db, customerId, offset, limit)).map((u) => u.username);

      for (const size of [100, 333, 500]) {
        const seen: string[] = [];
        for (let offset = 0; ; offset += size) {
          // One more than the batch: whether a next batch exists.
          const rows = await page(offset, size + 1);
          assert.deepEqual(rows.slice(0, size), expected.slice(offset, offset + size), `offset ${offset} size ${size}`);
          assert.equal(rows.length > size, offset + size < expected.length, `next batch after offset ${offset} size ${size}`);
          seen.push(...rows.slice(0, size));
          if (rows.length <= size) break;
        }
        assert.deepEqual(seen, expected, `every user once, in order (size ${size})`);
      }
      for (const offset of [0, 1, 939, 940, 963, 964, 965, 1023, 1024, expected.length - 1, expected.length, expected.length + 5]) {
        assert.deepEqual(await page(offset, 3), expected.slice(offset, offset + 3), `deep batch at ${offset}`);
      }
      assert.deepEqual(await page(0, 3), await page(0, 3), 'stable');
      assert.equal(await users.countUsers(db, customerId), expected.length);
      assert.equal((await users.listUsersPage(db, other, 0, 1000)).length, 130);
      assert.deepEqual(await users.listUsersPage(db, other, 130, 10), []);
    });
  });
}
