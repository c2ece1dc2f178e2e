/**
 * A store (SQLite in memory, or the process's PostgreSQL schema) with a customer of the test's
 * own, a test clock and a sealer. On PostgreSQL every test shares the schema, and a worker claims
 * any due mail: the customer (and its mails, by cascade) goes at the end so no test sends another's.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { createTestClock, type TestClock } from '../../src/lib/clock.ts';
import { createSealer, type Sealer } from '../../src/lib/seal.ts';
import { createOutbox, type Outbox } from '../../src/mail/outbox.ts';
import type { Executor, Store } from '../../src/store/db.ts';
import { openTestStore, type StoreKind } from '../helpers/stores.ts';

export interface MailFixture {
  store: Store;
  clock: TestClock;
  sealer: Sealer;
  outbox: Outbox;
  customerId: number;
}

export async function insertCustomer(db: Executor): Promise<number> {
  const key = `7${BigInt(`0x${randomBytes(5).toString('hex')}`)}`;
  const row = await db.insertInto('customers').values({
    customer_key: key, email: `mail-${key}@example.com`, display_name: 'mail', api_key_sealed: 'sealed',
    password_hash: null, password_expiry_days: null, created_at: 0, updated_at: 0,
  }).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function mailFixture(t: TestContext, kind: StoreKind): Promise<MailFixture> {
  const { store, owned } = await openTestStore(kind);
  const customerId = await insertCustomer(store.db);
  t.after(async () => {
    if (owned) await store.close();
    else await store.db.deleteFrom('customers').where('id', '=', customerId).execute();
  });
  const clock = createTestClock();
  const sealer = createSealer(randomBytes(32));
  return { store, clock, sealer, outbox: createOutbox({ sealer, clock, messageIdDomain: 'latchkey.test' }), customerId };
}

export const inviteParams = (link: string, userName = 'Ada Lovelace', applicationName = 'Wiki') => ({
  userName, applicationName, link, expiresInMinutes: 15,
});

export const newLink = () => `https://id.example.test/magic/${randomBytes(32).toString('base64url')}`;
