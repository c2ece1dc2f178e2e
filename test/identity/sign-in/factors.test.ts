/** A policy as the factors a session must show (RFC 8176 amr values), and step-up's "what is missing". */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requirements, satisfies } from '../../../src/identity/sign-in/factors.ts';

test('each first and second factor maps to its amr value; a recovery code counts as otp; ANY takes otp or hwk', () => {
  assert.deepEqual(requirements({ firstFactor: 'PASSWORD', secondFactor: 'NONE' }), { first: ['pwd'], second: undefined });
  assert.deepEqual(requirements({ firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP' }), { first: ['email'], second: ['otp'] });
  assert.deepEqual(requirements({ firstFactor: 'PASSKEY', secondFactor: 'ANY' }), { first: ['hwk'], second: ['otp', 'hwk'] });
});

test('a session satisfies a policy when it shows every factor the policy asks for, whatever else it shows', () => {
  const strict = { firstFactor: 'PASSWORD', secondFactor: 'AUTHENTICATOR_APP' } as const;
  assert.equal(satisfies(['pwd', 'otp'], strict), true);
  assert.equal(satisfies(['email', 'pwd', 'otp'], strict), true);
  assert.equal(satisfies(['pwd'], strict), false);
  assert.equal(satisfies(['email', 'otp'], strict), false);
  assert.equal(satisfies([], { firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }), false);
  assert.equal(satisfies(['pwd', 'hwk'], { firstFactor: 'PASSWORD', secondFactor: 'ANY' }), true);
});
