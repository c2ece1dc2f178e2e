/**
 * compileOnce reads skip Kysely's executor outside transactions. They must still never see another
 * request's uncommitted writes: on SQLite every query shares one connection, so a read issued while a
 * transaction is open has to wait for it; on PostgreSQL it runs on another connection at once.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { compileOnce } from '../../src/store/db.ts';
import { describeEachStore, openTestStore } from '../helpers/stores.ts';

const selectCustomerEmail = compileOnce((db) => db.selectFrom('customers').select('email').where('customer_key', '=', ''));

describeEachStore('direct reads', (kind) => {
  for (const outcome of ['commit', 'rollback'] as const) {
    test(`a read during another's open transaction sees only committed rows (${outcome})`, async (t) => {
      const { store, owned } = await openTestStore(kind);
      const { db } = store;
      const key = `9${BigInt(`0x${randomBytes(6).toString('hex')}`)}`;
      t.after(() => (owned ? store.close() : db.deleteFrom('customers').where('customer_key', '=', key).execute()));

      let readDuringTransaction: Promise<{ email: string }[]> | undefined;
      const transaction = db.transaction().execute(async (trx) => {
        await trx.insertInto('customers').values({
          customer_key: key, email: 'inside@example.com', display_name: 'direct reads', api_key_sealed: 'sealed',
          password_hash: null, password_expiry_days: null, created_at: 0, updated_at: 0,
        }).execute();
        readDuringTransaction = selectCustomerEmail(db, [key]);
        // Time for the read to run (and, were it wrong, to see the uncommitted row) before the end.
        await new Promise((resolve) => setTimeout(resolve, 20));
        if (outcome === 'rollback') throw new Error('roll back');
      });
      await transaction.catch(() => {});
      const rows = await readDuringTransaction!;

      if (outcome === 'rollback' || kind === 'postgres') {
        // Rolled back: nothing to see. PostgreSQL: the read ran at once, before the commit.
        assert.deepEqual(rows, []);
      } else {
        // SQLite: the read waited for the transaction's end, then saw its row.
        assert.deepEqual(rows, [{ email: 'inside@example.com' }]);
      }
      assert.deepEqual(await selectCustomerEmail(db, [key]), outcome === 'commit' ? [{ email: 'inside@example.com' }] : []);
    });
  }
});
