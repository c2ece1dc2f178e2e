/**
 * Imported password hashes: bcrypt ($2a$, $2b$, $2y$), argon2i and argon2id with other parameters are
 * kept as they are, the first login through the site's token endpoint verifies them and stores the
 * service's argon2id instead, without retiring the JWT that login got; a wrong password changes nothing.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import argon2 from 'argon2';
import bcrypt from 'bcryptjs';
import { SYSTEM } from '../../src/audit/context.ts';
import { createUserImportService } from '../../src/identity/users/import.ts';
import { findUsersByUsernames } from '../../src/identity/users/import-repo.ts';
import { readJsonLines } from '../../src/identity/users/import-rows.ts';
import { hashFormat, needsRehash, verifyPassword } from '../../src/lib/passwords.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { bearer, buildSite, POSTS_PATH, TOKEN_PATH } from '../site/helpers.ts';

if (postgresUrl) await postgresStore();

const PASSWORD = 'migrated-heron-lantern-8';
const SERVICE_ARGON2ID = /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/;

test('hash formats: what import accepts, what verifies, what needs a rehash', async () => {
  const b = bcrypt.hashSync(PASSWORD, 4);
  for (const prefix of ['$2a$', '$2b$', '$2y$']) {
    const hash = prefix + b.slice(4);
    assert.equal(hashFormat(hash), 'bcrypt');
    assert.equal(await verifyPassword(hash, PASSWORD), true, prefix);
    assert.equal(await verifyPassword(hash, 'wrong-password-here'), false, prefix);
    assert.equal(needsRehash(hash), true);
  }
  const argon2i = await argon2.hash(PASSWORD, { type: argon2.argon2i });
  assert.equal(hashFormat(argon2i), 'argon2');
  assert.equal(needsRehash(argon2i), true);
  const cheap = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 4096, timeCost: 1 });
  assert.equal(needsRehash(cheap), true, 'other parameters');
  assert.equal(needsRehash(await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 })), false);
  for (const other of ['$argon2d$v=19$m=4096,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g', '$1$saltsalt$abcdefghijklmnopqrstuv', '$5$rounds=5000$x$y',
    'plain-text', '$2x$10$' + b.slice(7), '$2b$03$' + b.slice(7)]) {
    assert.equal(hashFormat(other), undefined, other);
  }
});

describeEachStore('imported password hashes', (kind) => {
  test('the first login through the token endpoint verifies an imported hash and rehashes it to argon2id', async (t) => {
    const s = await buildSite(t, kind);
    const { db } = s.composition.store;
    const b = bcrypt.hashSync(PASSWORD, 4);
    const hashes: Record<string, string> = {
      bcrypt2a: '$2a$' + b.slice(4),
      bcrypt2b: b,
      bcrypt2y: '$2y$' + b.slice(4),
      argon2i: await argon2.hash(PASSWORD, { type: argon2.argon2i }),
      argon2idCheap: await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 4096, timeCost: 1 }),
    };
    const lines = Object.entries(hashes).map(([username, passwordHash]) =>
      JSON.stringify({ username, email: `${username}@example.test`, firstName: 'Imported', lastName: 'User', passwordHash }));
    const importer = createUserImportService({ db, users: s.composition.services.users, groups: s.composition.services.groups, audit: s.composition.services.audit });
    assert.deepStrictEqual(await importer.importUsers(s.customerId, readJsonLines(Readable.from([lines.join('\n')])), 'jsonl', SYSTEM),
      { created: 5, updated: 0, unchanged: 0, failed: 0, errors: [] });

    for (const [username, imported] of Object.entries(hashes)) {
      const storedHash = async () => (await findUsersByUsernames(db, s.customerId, [username]))[0].passwordHash!;
      assert.equal(await storedHash(), imported, 'kept as it is');
      const wrong = await s.inject({ method: 'POST', url: TOKEN_PATH, payload: { username, password: 'not-the-password-1' } });
      assert.equal(wrong.statusCode, 400, username);
      assert.equal(await storedHash(), imported, 'a failed login changes nothing');
      const before = (await findUsersByUsernames(db, s.customerId, [username]))[0].user;

      const token = await s.token(username, PASSWORD);
      const rehashed = await storedHash();
      assert.match(rehashed, SERVICE_ARGON2ID, username);
      assert.equal(await verifyPassword(rehashed, PASSWORD), true);
      const after = (await findUsersByUsernames(db, s.customerId, [username]))[0].user;
      assert.deepStrictEqual(
        { credentialsVersion: after.credentialsVersion, passwordChangedAt: after.passwordChangedAt, updatedAt: after.updatedAt },
        { credentialsVersion: before.credentialsVersion, passwordChangedAt: before.passwordChangedAt, updatedAt: before.updatedAt },
        'a rehash is not a password change',
      );
      assert.equal((await s.get(POSTS_PATH, bearer(token))).statusCode, 200, 'the JWT of that login still opens the posts');
      await s.token(username, PASSWORD);
      assert.equal(await storedHash(), rehashed, 'the service\'s own hash is not rehashed again');
    }
  });
});
