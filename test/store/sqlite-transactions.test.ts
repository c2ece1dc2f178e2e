/**
 * SQLite transactions hold the write lock from their start: a change that reads its row before writing it
 * (a user's update, a group's members) is not broken by another process (the CLI, a second server on the
 * file) writing in between. That process's writer waits for the transaction instead (busy_timeout).
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { createStore, type Executor } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';

async function insertCustomer(db: Executor, key: string): Promise<void> {
  await db.insertInto('customers').values({
    customer_key: key, email: `tx-${key}@example.com`, display_name: 'tx', api_key_sealed: 'sealed',
    password_hash: null, password_expiry_days: null, created_at: 0, updated_at: 0,
  }).execute();
}

test('a transaction that reads first keeps the database: another process writes after it, not in between', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'latchkey-sqlite-tx-')), 'db.sqlite');
  const store = await createStore(file);
  t.after(() => store.close());
  await migrate(store);
  // Another process's connection that does not wait for the lock, so "it would have to wait" shows as an error.
  const other = new BetterSqlite3(file);
  t.after(() => other.close());
  other.pragma('busy_timeout = 0');
  const otherInsert = other.prepare(`insert into customers (customer_key, email, display_name, api_key_sealed, created_at, updated_at)
    values (?, ?, 'other', 'sealed', 0, 0)`);

  await store.db.transaction().execute(async (trx) => {
    const before = await trx.selectFrom('customers').select('id').execute();
    assert.equal(before.length, 0);
    assert.throws(() => otherInsert.run('92000001', 'other@example.com'), { code: 'SQLITE_BUSY' });
    // The read and this write see the same database: the write commits.
    await insertCustomer(trx, '92000002');
  });

  otherInsert.run('92000001', 'other@example.com');
  const keys = (await store.db.selectFrom('customers').select('customer_key').orderBy('customer_key').execute()).map((row) => row.customer_key);
  assert.deepEqual(keys, ['92000001', '92000002']);
});
