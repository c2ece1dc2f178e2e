/**
 * Recovery codes: ten codes of ten unambiguous characters, each accepted once (however it is typed,
 * and once only under concurrent use), a new set ends the old one, only keyed hashes stored, the rows
 * go with their user. Both stores.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../../src/audit/context.ts';
import { UserNotFound } from '../../../src/lib/errors.ts';
import { build, type TestApp } from '../../helpers/app.ts';
import { describeEachStore } from '../../helpers/stores.ts';

async function newUser(env: TestApp, customerId = env.customer.customerId) {
  const username = `r${randomBytes(4).toString('hex')}`;
  await env.composition.services.users.create(customerId, {
    username, email: `${username}@example.test`, firstName: 'Rae', lastName: 'Recovery', password: 'a long enough passphrase', customAttributes: {},
  }, SYSTEM);
  return (await env.composition.services.users.findByLogin(customerId, username))!;
}

const storedHashes = async (env: TestApp, userId: number) =>
  (await env.composition.store.db.selectFrom('recovery_codes').select('code_hash').where('user_id', '=', userId).execute()).map((row) => row.code_hash);

describeEachStore('Recovery codes', (kind) => {
  test('ten distinct codes of ten unambiguous characters; each works once, however it is typed', async (t) => {
    const env = await build(t, kind);
    const codes = env.composition.services.recoveryCodes;
    const { customerId } = env.customer;
    const user = await newUser(env);

    const set = await codes.generate(customerId, user.id);
    assert.equal(set.length, 10);
    assert.equal(new Set(set).size, 10);
    for (const code of set) assert.match(code, /^[a-hjkmnp-z2-9]{10}$/, 'no 0, o, 1, l or i');
    assert.equal(await codes.remaining(customerId, user.id), 10);

    const [first, second, third] = set as [string, string, string];
    assert.equal(await codes.use(customerId, user.id, `${first.slice(0, 5).toUpperCase()}-${first.slice(5)}`), true, 'upper case and a hyphen');
    assert.equal(await codes.use(customerId, user.id, first), false, 'a used code never works again');
    assert.equal(await codes.use(customerId, user.id, ` ${second.slice(0, 5)} ${second.slice(5)} `), true, 'spaces');
    assert.equal(await codes.remaining(customerId, user.id), 8);

    assert.equal(await codes.use(customerId, user.id, 'abcdefghjk'), false, 'a code not in the set');
    assert.equal(await codes.use(customerId, user.id, ''), false);
    assert.equal(await codes.use(customerId, user.id, 'x'.repeat(10_000)), false);
    const other = await newUser(env);
    assert.equal(await codes.use(customerId, other.id, third), false, 'another user\'s code');
    const stranger = await env.newCustomer();
    assert.equal(await codes.use(stranger.customer.customerId, user.id, third), false, 'under another customer');
    assert.equal(await codes.remaining(customerId, user.id), 8, 'failed tries cost no code');
    assert.equal(await codes.use(customerId, user.id, third), true);
  });

  test('a new set ends the old one', async (t) => {
    const env = await build(t, kind);
    const codes = env.composition.services.recoveryCodes;
    const { customerId } = env.customer;
    const user = await newUser(env);
    const old = await codes.generate(customerId, user.id);
    await codes.use(customerId, user.id, old[0]!);
    const fresh = await codes.generate(customerId, user.id);
    assert.equal(await codes.remaining(customerId, user.id), 10);
    for (const code of old.slice(1)) assert.equal(await codes.use(customerId, user.id, code), false);
    assert.equal(await codes.use(customerId, user.id, fresh[9]!), true);
  });

  test('concurrent uses of one code: exactly one succeeds; concurrent regenerations leave exactly one set', async (t) => {
    const env = await build(t, kind);
    const codes = env.composition.services.recoveryCodes;
    const { customerId } = env.customer;
    const user = await newUser(env);
    const set = await codes.generate(customerId, user.id);

    const outcomes = await Promise.all(Array.from({ length: 12 }, () => codes.use(customerId, user.id, set[4]!)));
    assert.equal(outcomes.filter(Boolean).length, 1);
    assert.equal(await codes.remaining(customerId, user.id), 9);

    const sets = await Promise.all(Array.from({ length: 4 }, () => codes.generate(customerId, user.id)));
    assert.equal(await codes.remaining(customerId, user.id), 10, 'never twenty, never mixed');
    const working = [];
    for (const candidate of sets) {
      let accepted = 0;
      for (const code of candidate) if (await codes.use(customerId, user.id, code)) accepted++;
      working.push(accepted);
    }
    assert.deepEqual(working.sort(), [0, 0, 0, 10]);
  });

  test('stored only as keyed hashes; unknown users get none; the rows go with the user', async (t) => {
    const env = await build(t, kind);
    const { recoveryCodes: codes, users } = env.composition.services;
    const { customerId } = env.customer;
    const user = await newUser(env);
    const set = await codes.generate(customerId, user.id);

    const hashes = await storedHashes(env, user.id);
    assert.equal(hashes.length, 10);
    for (const code of set) {
      assert.ok(!hashes.some((h) => h.includes(code)), 'the code itself is not stored');
      assert.ok(!hashes.includes(createHash('sha256').update(code).digest('hex')), 'not a plain hash: a leaked table alone cannot be brute-forced');
    }

    await assert.rejects(codes.generate(customerId, user.id + 100_000), UserNotFound);
    const stranger = await env.newCustomer();
    await assert.rejects(codes.generate(stranger.customer.customerId, user.id), UserNotFound, 'another customer\'s user');

    await users.remove(customerId, user.username, SYSTEM);
    assert.deepEqual(await storedHashes(env, user.id), []);
  });
});
