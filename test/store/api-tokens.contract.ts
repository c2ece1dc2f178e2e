/** The API tokens repo's contract: lookup by hash with the owner, tenancy, expiry, use, deletion. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as tokens from '../../src/site/api-tokens/repo.ts';
import { deleteUser, updateUser } from '../../src/identity/users/repo.ts';
import type { User } from '../../src/identity/users/types.ts';
import { isUniqueViolation, type Executor } from '../../src/store/db.ts';
import { NOW, newCustomer, newUser, randomHex, rejection, type OpenStore } from './fixtures.ts';

const newToken = (db: Executor, owner: User, fields: Partial<tokens.NewTokenRow> = {}) => tokens.insertToken(db, owner.customerId, {
  userId: owner.id, username: owner.username, name: 'ci', type: 'bearer', tokenHash: randomHex(), createdAt: NOW, expiresAt: null, ...fields,
});

export function apiTokensRepoContract(openStore: OpenStore): void {
  describe('api tokens repo', () => {
    test('a token is found by the hash of its secret, with its owner as they are now', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const owner = await newUser(db, customerId, 'tia', { email: 'Tia@Example.com' });
      const hash = randomHex();
      const token = await newToken(db, owner, { name: 'deploy', type: 'basic', tokenHash: hash, expiresAt: NOW + 86_400_000 });
      const expected = {
        id: token.id, customerId, userId: owner.id, username: 'tia', name: 'deploy', type: 'basic', createdAt: NOW, expiresAt: NOW + 86_400_000, lastUsedAt: null,
      };
      assert.deepEqual(token, expected);
      assert.deepEqual(await tokens.findTokenByHash(db, customerId, hash), {
        token: expected,
        owner: { userId: owner.id, username: 'tia', email: 'Tia@Example.com', role: 'END_USER', credentialsVersion: 1, isDisabled: false, markForDeletion: false },
      });
      assert.equal(await tokens.findTokenByHash(db, customerId, randomHex()), undefined);
      assert.equal(await tokens.findTokenByHash(db, customerId, hash.toUpperCase()), undefined, 'the hash exactly');

      await updateUser(db, customerId, owner.id, { isDisabled: true, bumpCredentials: true, now: NOW + 1 });
      const { owner: now } = (await tokens.findTokenByHash(db, customerId, hash))!;
      assert.deepEqual([now.isDisabled, now.credentialsVersion], [true, 2], 'the owner is read with the token, never remembered');
    });

    test('a customer never finds, lists or deletes another customer\'s tokens', async (t) => {
      const { db } = await openStore(t);
      const a = await newCustomer(db);
      const b = await newCustomer(db);
      const ownerA = await newUser(db, a, 'sam');
      const ownerB = await newUser(db, b, 'sam');
      const hash = randomHex();
      const tokenA = await newToken(db, ownerA, { tokenHash: hash });
      assert.equal(await tokens.findTokenByHash(db, b, hash), undefined);
      assert.equal(await tokens.findToken(db, b, tokenA.id), undefined);
      assert.deepEqual(await tokens.listTokens(db, b, ownerA.id), []);
      assert.equal(await tokens.countLiveTokens(db, b, ownerA.id, NOW), 0);
      assert.equal(await tokens.deleteToken(db, b, tokenA.id), false);
      await tokens.touchToken(db, b, tokenA.id, NOW + 1, 0);
      assert.deepEqual(await tokens.findToken(db, a, tokenA.id), tokenA, 'untouched');
      assert.deepEqual(await tokens.listTokens(db, b, ownerB.id), []);
    });

    test('a token hash is unique across customers', async (t) => {
      const { db } = await openStore(t);
      const hash = randomHex();
      await newToken(db, await newUser(db, await newCustomer(db), 'one'), { tokenHash: hash });
      const other = await newUser(db, await newCustomer(db), 'two');
      assert.ok(isUniqueViolation(await rejection(newToken(db, other, { tokenHash: hash }))));
      assert.deepEqual(await tokens.listTokens(db, other.customerId, other.id), []);
    });

    test('a user\'s tokens are listed oldest first; live ones are counted; expired ones deleted and purged', async (t) => {
      const { db } = await openStore(t);
      const customerId = await newCustomer(db);
      const owner = await newUser(db, customerId, 'ed');
      const neighbour = await newUser(db, customerId, 'ned');
      const forever = await newToken(db, owner, { name: 'forever' });
      const expired = await newToken(db, owner, { name: 'expired', expiresAt: NOW });
      const later = await newToken(db, owner, { name: 'later', expiresAt: NOW + 1 });
      const theirs = await newToken(db, neighbour, { name: 'theirs', expiresAt: NOW - 1 });
      assert.deepEqual((await tokens.listTokens(db, customerId, owner.id)).map((x) => x.name), ['forever', 'expired', 'later']);
      assert.equal(await tokens.countLiveTokens(db, customerId, owner.id, NOW), 2, 'a token expiring at now is expired');
      assert.deepEqual(await tokens.deleteExpiredTokens(db, customerId, owner.id, NOW), [{ id: expired.id, name: 'expired' }], 'the deleted tokens, for their audit events');
      assert.deepEqual((await tokens.listTokens(db, customerId, owner.id)).map((x) => x.id), [forever.id, later.id]);
      assert.equal(await tokens.findToken(db, customerId, expired.id), undefined);
      assert.deepEqual((await tokens.listTokens(db, customerId, neighbour.id)).map((x) => x.id), [theirs.id], 'only the user\'s');

      assert.equal(await tokens.deleteToken(db, customerId, forever.id), true);
      assert.equal(await tokens.deleteToken(db, customerId, forever.id), false, 'once');
      assert.deepEqual((await tokens.listTokens(db, customerId, owner.id)).map((x) => x.id), [later.id]);
    });

    test('purging deletes tokens that expired before a moment, any customer, at most a batch at a time', async (t) => {
      const { db } = await openStore(t);
      // Instants before any other test's, so nothing else in the store is purged with them.
      const owners = [await newUser(db, await newCustomer(db), 'p1'), await newUser(db, await newCustomer(db), 'p2')];
      const old = [];
      for (const [i, expiresAt] of [1000, 1001, 1002].entries()) old.push(await newToken(db, owners[i % 2], { createdAt: 0, expiresAt }));
      const recent = await newToken(db, owners[0], { createdAt: 0, expiresAt: 5000 });
      assert.equal(await tokens.purgeExpiredBatch(db, 2000, 2), 2);
      assert.equal(await tokens.purgeExpiredBatch(db, 2000, 2), 1);
      assert.equal(await tokens.purgeExpiredBatch(db, 2000, 2), 0);
      for (const token of old) assert.equal(await tokens.findToken(db, token.customerId, token.id), undefined);
      assert.deepEqual(await tokens.findToken(db, recent.customerId, recent.id), recent);
    });

    test('a use is recorded at most once per interval', async (t) => {
      const { db } = await openStore(t);
      const owner = await newUser(db, await newCustomer(db), 'uma');
      const token = await newToken(db, owner);
      const lastUsed = async () => (await tokens.findToken(db, owner.customerId, token.id))!.lastUsedAt;
      await tokens.touchToken(db, owner.customerId, token.id, NOW + 1000, 60_000);
      assert.equal(await lastUsed(), NOW + 1000);
      await tokens.touchToken(db, owner.customerId, token.id, NOW + 30_000, 60_000);
      assert.equal(await lastUsed(), NOW + 1000, 'within the interval');
      await tokens.touchToken(db, owner.customerId, token.id, NOW + 61_000, 60_000);
      assert.equal(await lastUsed(), NOW + 61_000);
    });

    test('deleting the owner deletes their tokens', async (t) => {
      const { db } = await openStore(t);
      const owner = await newUser(db, await newCustomer(db), 'del');
      const hash = randomHex();
      const token = await newToken(db, owner, { tokenHash: hash });
      await tokens.lockUserQuota(db, owner.customerId, owner.id, NOW);
      assert.equal(await deleteUser(db, owner.customerId, owner.id), true);
      assert.equal(await tokens.findTokenByHash(db, owner.customerId, hash), undefined);
      assert.equal(await tokens.findToken(db, owner.customerId, token.id), undefined);
    });
  });
}
