/**
 * Runs a black-box suite once per store: SQLite always, PostgreSQL when LATCHKEY_TEST_POSTGRES_URL
 * is set (in its own schema per test process, dropped at the end). In CI a missing URL fails.
 */
import { randomBytes } from 'node:crypto';
import { after, describe, test, type TestContext } from 'node:test';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';

export type StoreKind = 'sqlite' | 'postgres';

export const postgresUrl = process.env.LATCHKEY_TEST_POSTGRES_URL || undefined;

let sharedPostgres: Promise<Store> | undefined;
let schemaName: string | undefined;

/**
 * One migrated PostgreSQL schema per test process; every test makes its own customer in it.
 * Call it first at file level (describeEachStore does): it registers the file's closing hook.
 */
export function postgresStore(): Promise<Store> {
  if (!postgresUrl) throw new Error('LATCHKEY_TEST_POSTGRES_URL is not set');
  if (!sharedPostgres) {
    schemaName = `lk_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    sharedPostgres = createStore(postgresUrl, { schema: schemaName, poolSize: 5 }).then(async (store) => {
      await migrate(store);
      return store;
    });
    after(async () => {
      const store = await sharedPostgres!;
      await store.close();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`drop schema if exists ${schemaName} cascade`);
      await client.end();
    });
  }
  return sharedPostgres;
}

/** The schema of the process's shared PostgreSQL store (a second store on it stands for another node). */
export async function postgresSchema(): Promise<string> {
  await postgresStore();
  return schemaName!;
}

/** A fresh store: a new in-memory SQLite database, or the process's shared PostgreSQL schema. */
export async function openTestStore(kind: StoreKind): Promise<{ store: Store; owned: boolean }> {
  if (kind === 'postgres') return { store: await postgresStore(), owned: false };
  const store = await createStore(':memory:');
  await migrate(store);
  return { store, owned: true };
}

/** describe() the suite for each store; PostgreSQL says why when skipped, and fails in CI. */
export function describeEachStore(title: string, suite: (kind: StoreKind) => void): void {
  describe(`${title} [sqlite]`, () => suite('sqlite'));
  if (postgresUrl) {
    // Opened here, at file level, so its closing hook belongs to the file and not to the first test.
    postgresStore().catch(() => {});
    describe(`${title} [postgres]`, () => suite('postgres'));
  } else if (process.env.CI === 'true') {
    test(`${title} [postgres]`, () => { throw new Error('CI must run the PostgreSQL suite: set LATCHKEY_TEST_POSTGRES_URL'); });
  } else {
    describe(`${title} [postgres]`, { skip: 'LATCHKEY_TEST_POSTGRES_URL is not set' }, () => {});
  }
}

/**
 * A database URL on a new, empty PostgreSQL schema of the test's own (for a server started as a child
 * process, which migrates it itself), dropped after the test.
 */
export async function emptyPostgresSchemaUrl(t: TestContext, prefix: string): Promise<string> {
  const schema = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  t.after(async () => { await admin.query(`drop schema if exists ${schema} cascade`); await admin.end(); });
  const url = new URL(postgresUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}
