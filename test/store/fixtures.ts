/**
 * What the store contracts share: a store per test (closed with it when it is the test's own), and
 * customers and users made through the repos, as the services make them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { insertUser, type NewUserRow } from '../../src/identity/users/repo.ts';
import type { User } from '../../src/identity/users/types.ts';
import type { Executor, Store } from '../../src/store/db.ts';

/** A migrated store for the test: a fresh SQLite database, or the process's PostgreSQL schema. */
export type OpenStore = (t: TestContext) => Promise<Store>;

export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

export const randomHex = (bytes = 32): string => randomBytes(bytes).toString('hex');

/** A new customer of its own (nothing else in the store belongs to it). */
export async function newCustomer(db: Executor): Promise<number> {
  const row = await db.insertInto('customers').values({
    customer_key: `9${BigInt(`0x${randomHex(6)}`)}`,
    email: `${randomHex(4)}@example.com`,
    display_name: 'contract',
    api_key_sealed: 'sealed',
    password_hash: null,
    password_expiry_days: null,
    created_at: NOW,
    updated_at: NOW,
  }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export function userValues(username: string, fields: Partial<NewUserRow> = {}): NewUserRow {
  return {
    guid: randomUUID(),
    username,
    email: `${username.toLowerCase()}@example.com`,
    firstName: 'First',
    lastName: 'Last',
    phone: '',
    alternateEmail: '',
    passwordHash: null,
    customAttributes: {},
    now: NOW,
    ...fields,
  };
}

export const newUser = (db: Executor, customerId: number, username: string, fields: Partial<NewUserRow> = {}): Promise<User> =>
  insertUser(db, customerId, userValues(username, fields));

/** Resolves to the error `promise` rejects with; fails when it fulfils. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try { await promise; } catch (error) { return error; }
  throw new Error('expected a rejection');
}
