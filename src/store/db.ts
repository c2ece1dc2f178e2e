/**
 * createStore(url): the one place that knows which database is behind Kysely. A postgres:// URL
 * opens a pg pool; anything else is a SQLite file path (":memory:" for tests).
 */
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type PostgresPool, type PostgresPoolClient, type SqliteDatabase, type SqliteStatement, type Transaction } from 'kysely';
import pg from 'pg';
import { createChangeLog, createWriteTracker, type ChangeFeed, type WriteTracker } from './changes.ts';
import { listenForChanges } from './postgres-changes.ts';
import { createPrivateFile } from './private-files.ts';
import type { Database } from './schema.ts';

export type Dialect = 'sqlite' | 'postgres';
export type Executor = Kysely<Database> | Transaction<Database>;

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** What changed since when: lets services keep read results in memory (see changes.ts). */
  changes: ChangeFeed;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL only: the schema to use (created when missing); tests use one per run. */
  schema?: string;
  poolSize?: number;
  /** PostgreSQL only: the change listener's own URL, when it must differ (tests route it through a proxy). */
  listenerUrl?: string;
}

/** PostgreSQL: the longest wait for a connection of the pool (see createPostgresStore). */
export const CONNECT_TIMEOUT_MS = 3000;

// int8 (bigint) columns hold epoch milliseconds and ids: well inside 2^53, so numbers, not strings.
pg.types.setTypeParser(20, (value) => Number(value));

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export async function createStore(url: string, options: StoreOptions = {}): Promise<Store> {
  if (isPostgresUrl(url)) return createPostgresStore(url, options);
  return createSqliteStore(url);
}

function createSqliteStore(path: string): Store {
  // 0600 file in a 0700 directory before SQLite opens it: the database holds secrets (sealed) and hashes.
  if (path !== ':memory:') createPrivateFile(path);
  const database = new BetterSqlite3(path);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  // Moves when another connection (another process) commits; this connection's own writes are
  // reported by the statements themselves.
  const dataVersion = database.prepare('pragma data_version').pluck();
  let seenVersion = dataVersion.get();
  const changes = createChangeLog(() => {
    const version = dataVersion.get();
    if (version === seenVersion) return false;
    seenVersion = version;
    return true;
  });
  const statements = withStatementCache(database, createWriteTracker(changes));
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: statements }) });
  return {
    db,
    dialect: 'sqlite',
    changes,
    ping: async () => { database.prepare('select 1').get(); },
    close: () => db.destroy(),
  };
}

/**
 * Kysely prepares every SQLite statement anew, and preparing is the largest single cost of a
 * small query (a users lookup by id: 19 µs prepared every time, 5 µs reused). Statements are reusable (the dialect runs one query at a time), so keep the most
 * recent ones by SQL text; IN-lists of varying length make the key space open-ended, hence the bound.
 * Every statement run is reported to `writes`, which tells the change log what was written.
 */
function withStatementCache(database: BetterSqlite3.Database, writes: WriteTracker, maxStatements = 500): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  const tracked = (text: string, statement: BetterSqlite3.Statement): SqliteStatement => ({
    reader: statement.reader,
    all(parameters) {
      try { return statement.all(parameters as unknown[]); } finally { writes.ran(text); }
    },
    run(parameters) {
      try { return statement.run(parameters as unknown[]); } finally { writes.ran(text); }
    },
    iterate: (parameters) => statement.iterate(parameters as unknown[]),
  });
  return {
    close: () => database.close(),
    prepare(text) {
      let statement = statements.get(text);
      if (statement) {
        statements.delete(text);
      } else {
        statement = tracked(text, database.prepare(text));
        if (statements.size >= maxStatements) statements.delete(statements.keys().next().value!);
      }
      statements.set(text, statement);
      return statement;
    },
  };
}

async function createPostgresStore(url: string, options: StoreOptions): Promise<Store> {
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error('invalid schema name');
  if (schema) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try { await admin.query(`create schema if not exists ${schema}`); } finally { await admin.end(); }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // A database that accepts connections but never answers (a cut network, a stalled proxy) must not
    // hold requests for ever: a connection (or a wait for a free one) gives up after this, and the
    // request is answered 503 (lib/errors.ts). Generous enough for a busy pool under load.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A peer gone silently is noticed by TCP keepalive instead of on the next query's long timeout.
    keepAlive: true,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  const changes = createChangeLog();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: withNamedStatements(pool, () => createWriteTracker(changes)) }) });
  const listener = await listenForChanges({
    connectionString: options.listenerUrl ?? url,
    // Named so an operator (or a test) can find this node's listening connection in pg_stat_activity.
    application_name: schema ? `latchkey-changes ${schema}` : 'latchkey-changes',
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  }, changes);
  return {
    db,
    dialect: 'postgres',
    changes,
    ping: async () => { await sql`select 1`.execute(db); },
    close: async () => {
      await listener.close();
      await db.destroy();
    },
  };
}

/**
 * PostgreSQL plans every unnamed statement anew, and planning a small lookup costs several times its
 * execution. Naming a statement makes each connection parse and plan it once. Only plain DML is
 * named (not DDL, not transaction control), at most `maxNames` distinct texts (IN-lists of varying
 * length must not grow every connection's statement cache without bound). A statement whose result
 * columns changed under it (a migration by another node) is dropped and run unnamed again.
 */
function withNamedStatements(pool: pg.Pool, newTracker: () => WriteTracker, maxNames = 500): PostgresPool {
  const names = new Map<string, string>();
  // Never reused: a connection may still hold a dropped text's statement under its old name.
  let issued = 0;
  const DML = /^\s*(select|insert|update|delete|with)\b/i;
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxNames && DML.test(text)) {
      name = `lk_${issued++}`;
      names.set(text, name);
    }
    return name;
  };
  const query = (client: pg.PoolClient, text: string, values: readonly unknown[] | undefined): Promise<pg.QueryResult> => {
    const name = nameOf(text);
    if (!name) return client.query(text, values as unknown[]);
    return client.query({ name, text, values: values as unknown[] }).catch((error: { code?: string }) => {
      // 0A000: "cached plan must not change result type".
      if (error?.code !== '0A000') throw error;
      names.delete(text);
      return client.query(text, values as unknown[]);
    });
  };
  return {
    async connect() {
      const client = await pool.connect();
      // The pool listens for errors of idle connections only: one that dies while checked out (between
      // a transaction's statements, or before release) would emit 'error' to nobody and end the process.
      // Noted here instead, and the connection is destroyed on release rather than reused.
      let broken: Error | undefined;
      const onError = (error: Error) => { broken = error; };
      client.on('error', onError);
      // Kysely holds one connection from BEGIN to COMMIT, so one tracker per checkout follows a transaction.
      const writes = newTracker();
      const wrapped = {
        query(text: unknown, values?: ReadonlyArray<unknown>) {
          if (typeof text !== 'string') return client.query(text as never);
          return query(client, text, values).finally(() => writes.ran(text));
        },
        release: () => {
          client.removeListener('error', onError);
          client.release(broken);
        },
      };
      return wrapped as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

/** True when `error` is a unique-constraint violation, on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
