/**
 * The change feed behind the read caches: a kept answer may be served only while none of its tables
 * changed, whoever changed them (this process, another process on the same SQLite file, another node
 * or psql on PostgreSQL). Each test asserts what a cache relies on.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { classifyStatement, WATCHED_TABLES } from '../../src/store/changes.ts';
import { createStore, type Executor, type Store } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { describeEachStore, openTestStore, postgresSchema, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

const newKey = () => `9${BigInt(`0x${randomBytes(6).toString('hex')}`)}`;

async function insertCustomer(db: Executor, key = newKey()): Promise<string> {
  await db.insertInto('customers').values({
    customer_key: key, email: `changes-${key}@example.com`, display_name: 'changes', api_key_sealed: 'sealed',
    password_hash: null, password_expiry_days: null, created_at: 0, updated_at: 0,
  }).execute();
  return key;
}

/** Waits for a notification from another connection to arrive (PostgreSQL); fails after 5 s. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited > 5000) assert.fail(`still not seen after 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * On PostgreSQL this store's own earlier writes also come back as notifications, a moment later:
 * let them arrive before taking a mark that must stay unchanged.
 */
async function settle(kind: StoreKind): Promise<void> {
  if (kind === 'postgres') await new Promise((resolve) => setTimeout(resolve, 200));
}

/** A second store on the same database: another process on the SQLite file, another node on PostgreSQL. */
async function openPair(kind: StoreKind): Promise<{ here: Store; elsewhere: Store; close(): Promise<void> }> {
  if (kind === 'sqlite') {
    const file = join(mkdtempSync(join(tmpdir(), 'latchkey-changes-')), 'db.sqlite');
    const here = await createStore(file);
    await migrate(here);
    const elsewhere = await createStore(file);
    return { here, elsewhere, close: async () => { await elsewhere.close(); await here.close(); } };
  }
  const here = await postgresStore();
  const schema = await postgresSchema();
  const elsewhere = await createStore(postgresUrl!, { schema, poolSize: 1 });
  return { here, elsewhere, close: () => elsewhere.close() };
}

test('statements are classified by what they may change', () => {
  assert.deepEqual(classifyStatement('select * from "users"'), { kind: 'read' });
  assert.deepEqual(classifyStatement('insert into "api_tokens" ("name") values ($1) returning "id"'), { kind: 'write', tables: ['api_tokens'] });
  assert.deepEqual(classifyStatement('update "users" set "disabled" = ?'), { kind: 'write', tables: ['users'] });
  assert.deepEqual(classifyStatement('delete from "group_members" where 1'), { kind: 'write', tables: ['group_members'] });
  assert.deepEqual(classifyStatement('start transaction isolation level serializable'), { kind: 'begin' });
  assert.deepEqual(classifyStatement('commit'), { kind: 'commit' });
  // Unknown statements (DDL, a CTE that writes) change everything, to be safe.
  assert.deepEqual(classifyStatement('alter table "users" add column "x" text'), { kind: 'write', tables: 'all' });
  assert.deepEqual(classifyStatement('with moved as (delete from "users" returning *) select 1'), { kind: 'write', tables: 'all' });
});

describeEachStore('change feed', (kind) => {
  test('a write through the store changes its table and no other', async (t) => {
    const { store, owned } = await openTestStore(kind);
    t.after(() => (owned ? store.close() : undefined));
    const { changes } = store;
    await eventually(() => changes.unchangedSince(changes.mark(), ['customers']), 'the feed trusted');
    const before = changes.mark();
    assert.equal(changes.unchangedSince(before, ['customers', 'api_tokens']), true);
    await insertCustomer(store.db);
    assert.equal(changes.unchangedSince(before, ['customers']), false);
    assert.equal(changes.unchangedSince(before, ['api_tokens']), true);
    assert.equal(changes.unchangedSince(changes.mark(), ['customers']), true);
  });

  test("a transaction's writes count once committed; a rolled-back one's never", async (t) => {
    const { store, owned } = await openTestStore(kind);
    t.after(() => (owned ? store.close() : undefined));
    const { changes, db } = store;
    await eventually(() => changes.unchangedSince(changes.mark(), ['customers']), 'the feed trusted');
    await settle(kind);

    const beforeRollback = changes.mark();
    await db.transaction().execute(async (trx) => {
      await insertCustomer(trx);
      throw new Error('roll back');
    }).catch(() => {});
    assert.equal(changes.unchangedSince(beforeRollback, ['customers']), true);

    const before = changes.mark();
    let duringTransaction: boolean | undefined;
    await db.transaction().execute(async (trx) => {
      await insertCustomer(trx);
      // Not yet visible to anyone else: a kept answer is still what a reader would get.
      duringTransaction = changes.unchangedSince(before, ['customers']);
    });
    assert.equal(duringTransaction, true);
    assert.equal(changes.unchangedSince(before, ['customers']), false);
  });

  test('a write by another process or node (or by hand in SQL) is seen', async (t) => {
    const pair = await openPair(kind);
    t.after(() => pair.close());
    const { changes } = pair.here;
    await eventually(() => changes.unchangedSince(changes.mark(), ['customers']), 'the feed trusted');

    const before = changes.mark();
    const key = await insertCustomer(pair.elsewhere.db);
    await eventually(() => !changes.unchangedSince(before, ['customers']), "the other store's write");
    // SQLite cannot tell which table another connection wrote: every one counts as changed.
    assert.equal(changes.unchangedSince(before, ['api_tokens']), kind === 'postgres');

    if (kind === 'postgres') {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      t.after(() => client.end());
      const schema = await postgresSchema();
      const afterNode = changes.mark();
      await client.query(`update ${schema}.customers set display_name = 'by hand' where customer_key = $1`, [key]);
      await eventually(() => !changes.unchangedSince(afterNode, ['customers']), 'a write made with psql');
      // Every table whose reads are kept notifies (a statement trigger fires even when no row matches).
      for (const table of WATCHED_TABLES) {
        const mark = changes.mark();
        await client.query(`delete from ${schema}.${table} where false`);
        await eventually(() => !changes.unchangedSince(mark, [table]), `a statement on ${table}`);
      }
    }
  });

  if (kind === 'postgres') {
    test('while the listening connection is lost nothing counts as unchanged, and it comes back', async () => {
      const { store } = await openTestStore(kind);
      const { changes } = store;
      await eventually(() => changes.unchangedSince(changes.mark(), ['customers']), 'the feed trusted');
      const schema = await postgresSchema();
      const before = changes.mark();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        const killed = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [`latchkey-changes ${schema}`]);
        assert.equal(killed.rowCount, 1);
      } finally {
        await client.end();
      }
      await eventually(() => !changes.unchangedSince(before, ['customers']), 'the lost connection');
      // Reconnected (within a second or so): fresh marks hold again; the old one stays stale.
      await eventually(() => changes.unchangedSince(changes.mark(), ['customers']), 'the feed trusted again');
      assert.equal(changes.unchangedSince(before, ['customers']), false);
    });
  }
});
