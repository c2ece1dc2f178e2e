/** Password hashing as the services use it: argon2id, verification, and the per-CPU queue in front of it. */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { hashPassword, verifyPassword } from '../../src/lib/passwords.ts';

test('many verifications at once all answer right, and a malformed hash does not hold up the others', async () => {
  const hash = await hashPassword('violet-otter-harbour-42');
  assert.match(hash, /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
  // More than the queue admits at once, so some wait; malformed hashes in between fail fast.
  const checks = Array.from({ length: availableParallelism() * 3 + 2 }, (_, i) => {
    if (i % 4 === 0) return verifyPassword('not-a-hash', 'violet-otter-harbour-42').then((ok) => assert.equal(ok, false));
    const password = i % 2 ? 'violet-otter-harbour-42' : 'wrong password';
    return verifyPassword(hash, password).then((ok) => assert.equal(ok, i % 2 === 1));
  });
  await Promise.all(checks);
  // The queue is empty again: one more verification goes straight through.
  assert.equal(await verifyPassword(hash, 'violet-otter-harbour-42'), true);
});
