/** The site API keys repo's contract: lookup by hash, the one default key, revocation, tenancy, deletion. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as keys from '../../src/site/api-keys/repo.ts';
import { deleteUser, updateUser } from '../../src/identity/users/repo.ts';
import { isUniqueViolation, type Executor } from '../../src/store/db.ts';
import { NOW, newCustomer, newUser, randomHex, rejection, type OpenStore } from './fixtures.ts';

const newKey = (db: Executor, customerId: number, fields: Partial<Parameters<typeof keys.insertKey>[2]> = {}) =>
  keys.insertKey(db, customerId, { userId: null, name: '', keyHash: randomHex(), expiresAt: null, now: NOW, ...fields });

export function siteApiKeysRepoContract(openStore: OpenStore): void {
  describe('site api keys repo', () => {
    test('keys read back whole; the live lookup by hash gives the key\'s user as they are now', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const user = await newUser(db, customerId, 'kay', { email: 'Kay@Example.com' });
      const lookup = keys.prepareLiveKeyLookup(db);
      const defaultHash = randomHex();
      const userHash = randomHex();
      const defaultKey = await newKey(db, customerId, { keyHash: defaultHash, expiresAt: NOW + 1000 });
      const userKey = await newKey(db, customerId, { userId: user.id, name: 'laptop', keyHash: userHash });

      assert.deepEqual(await keys.findKey(db, customerId, userKey), {
        id: userKey, customerId, userId: user.id, username: 'kay', name: 'laptop', createdAt: NOW, expiresAt: null, revokedAt: null,
      });
      assert.deepEqual(await keys.findKey(db, customerId, defaultKey), {
        id: defaultKey, customerId, userId: null, username: null, name: '', createdAt: NOW, expiresAt: NOW + 1000, revokedAt: null,
      });
      assert.deepEqual(await lookup(customerId, defaultHash), { id: defaultKey, expiresAt: NOW + 1000, user: null, orphaned: false });
      assert.deepEqual(await lookup(customerId, userHash), {
        id: userKey, expiresAt: null, orphaned: false,
        user: { id: user.id, username: 'kay', email: 'Kay@Example.com', role: 'END_USER', isActive: true, credentialsVersion: 1 },
      });
      assert.equal(await lookup(customerId, randomHex()), undefined);

      await updateUser(db, customerId, user.id, { isDisabled: true, bumpCredentials: true, now: NOW + 1 });
      assert.deepEqual((await lookup(customerId, userHash))?.user, {
        id: user.id, username: 'kay', email: 'Kay@Example.com', role: 'END_USER', isActive: false, credentialsVersion: 2,
      });
    });

    test('keys are listed in creation order, all, the default ones or one user\'s', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const [ann, bob] = [await newUser(db, customerId, 'ann'), await newUser(db, customerId, 'bob')];
      const first = await newKey(db, customerId, { userId: bob.id, name: 'b1' });
      const dflt = await newKey(db, customerId, { name: 'default' });
      const second = await newKey(db, customerId, { userId: ann.id, name: 'a1' });
      const third = await newKey(db, customerId, { userId: bob.id, name: 'b2' });
      const ids = async (userId?: number | null) => (await keys.listKeys(db, customerId, userId)).map((k) => k.id);
      assert.deepEqual(await ids(), [first, dflt, second, third]);
      assert.deepEqual(await ids(null), [dflt]);
      assert.deepEqual(await ids(bob.id), [first, third]);
      assert.deepEqual((await keys.listKeys(db, customerId, ann.id)).map((k) => [k.username, k.name]), [['ann', 'a1']]);
    });

    test('one live default key per customer; a revoked key is revoked once and no longer found', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const hash = randomHex();
      const first = await newKey(db, customerId, { keyHash: hash });
      assert.ok(isUniqueViolation(await rejection(newKey(db, customerId))), 'a second live default key');
      assert.equal(await keys.revokeKey(db, customerId, first, NOW + 5), true);
      assert.equal(await keys.revokeKey(db, customerId, first, NOW + 6), false, 'once');
      assert.equal((await keys.findKey(db, customerId, first))?.revokedAt, NOW + 5);
      assert.equal(await keys.prepareLiveKeyLookup(db)(customerId, hash), undefined);
      await newKey(db, customerId);
      assert.ok(isUniqueViolation(await rejection(newKey(db, await newCustomer(db), { keyHash: hash }))), 'a key hash is unique across customers');
    });

    test('an expired default key is revoked, so a new one can be made; a live one is not', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const key = await newKey(db, customerId, { expiresAt: NOW + 100 });
      await keys.revokeExpiredDefaultKey(db, customerId, NOW + 99);
      assert.equal((await keys.findKey(db, customerId, key))?.revokedAt, null);
      await keys.revokeExpiredDefaultKey(db, customerId, NOW + 100);
      assert.equal((await keys.findKey(db, customerId, key))?.revokedAt, NOW + 100);
      await newKey(db, customerId);
    });

    test('a customer never finds, lists or revokes another customer\'s keys', async (t) => {
      const { db } = await openStore(t);
      const a = await newCustomer(db);
      const b = await newCustomer(db);
      const user = await newUser(db, a, 'sam');
      const hash = randomHex();
      const key = await newKey(db, a, { userId: user.id, keyHash: hash });
      const defaultA = await newKey(db, a);
      assert.equal(await keys.prepareLiveKeyLookup(db)(b, hash), undefined);
      assert.equal(await keys.findKey(db, b, key), undefined);
      assert.deepEqual(await keys.listKeys(db, b), []);
      assert.deepEqual(await keys.listKeys(db, b, user.id), []);
      assert.equal(await keys.revokeKey(db, b, key, NOW), false);
      await keys.revokeExpiredDefaultKey(db, b, Number.MAX_SAFE_INTEGER);
      assert.deepEqual((await keys.listKeys(db, a)).map((k) => [k.id, k.revokedAt]), [[key, null], [defaultA, null]]);
      await newKey(db, b);
    });

    test('deleting a user deletes their keys', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const user = await newUser(db, customerId, 'gus');
      const hash = randomHex();
      const key = await newKey(db, customerId, { userId: user.id, keyHash: hash });
      await deleteUser(db, customerId, user.id);
      assert.equal(await keys.prepareLiveKeyLookup(db)(customerId, hash), undefined);
      assert.equal(await keys.findKey(db, customerId, key), undefined);
    });
  });
}
