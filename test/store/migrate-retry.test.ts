/**
 * Migrations on PostgreSQL retry when another schema of the database is dropped while Kysely's migrator
 * reads the catalog (the tests drop one per test process; a deployment's database may hold others). The
 * failures such a drop gives are taken from PostgreSQL itself where they can be made on demand; the
 * internal "cache lookup failed" of a drop between two catalog lookups cannot, and is the one a CI run met.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { isSchemaDroppedMeanwhile } from '../../src/store/migrations/migrate.ts';
import { postgresUrl } from '../helpers/stores.ts';

/** PostgreSQL's own error for `text`. */
async function errorOf(client: pg.Client, text: string): Promise<unknown> {
  try {
    await client.query(text);
  } catch (error) {
    return error;
  }
  throw new Error(`${text} did not fail`);
}

function internalError(message: string): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error');
  error.code = 'XX000';
  return error;
}

test('a schema dropped under the migrator is retried; other failures are not', { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async () => {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    const gone = `lk_gone_${process.pid}`;
    await client.query(`create schema ${gone}`);
    await client.query(`create table ${gone}.t (id serial primary key)`);
    const droppedTable = `select * from ${gone}.t`;
    await client.query(`drop schema ${gone} cascade`);

    assert.equal(isSchemaDroppedMeanwhile(await errorOf(client, droppedTable)), true, 'schema … does not exist (3F000)');
    assert.equal(isSchemaDroppedMeanwhile(await errorOf(client, `select * from public.lk_gone_${process.pid}`)), true, 'relation … does not exist (42P01)');
    await client.query(`create temporary table lk_columns (id int)`);
    assert.equal(isSchemaDroppedMeanwhile(await errorOf(client, `select pg_get_serial_sequence('lk_columns', 'gone')`)), true, 'column … does not exist (42703)');
    assert.equal(isSchemaDroppedMeanwhile(internalError('cache lookup failed for namespace 457202')), true);
    assert.equal(isSchemaDroppedMeanwhile(internalError('cache lookup failed for relation 91822')), true);

    // What a migration's own mistake or a broken database gives is not retried: it would fail again.
    assert.equal(isSchemaDroppedMeanwhile(await errorOf(client, 'selec 1')), false, 'a syntax error (42601)');
    assert.equal(isSchemaDroppedMeanwhile(await errorOf(client, `create temporary table lk_columns (id int)`)), false, 'already exists (42P07)');
    assert.equal(isSchemaDroppedMeanwhile(internalError('could not open file "base/16384/2619": No such file or directory')), false);
    assert.equal(isSchemaDroppedMeanwhile(new Error('connect ECONNREFUSED 127.0.0.1:5432')), false);
  } finally {
    await client.end();
  }
});
