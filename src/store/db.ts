/**
 * createStore(url): the one place that knows which database is behind Kysely. A postgres:// URL
 * opens a pg pool; anything else is a SQLite file path (":memory:" for tests).
 */
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type PostgresPool, type PostgresPoolClient, type RawBuilder, type SqliteDatabase, type SqliteDialectConfig, type SqliteStatement, type Transaction } from 'kysely';
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
  /** PostgreSQL only: the bound on each statement (default QUERY_TIMEOUT_MS); tests shorten it. */
  queryTimeoutMs?: number;
  /** PostgreSQL only: told when the change feed is lost after working, and when it is back. */
  onChangeFeed?: (state: 'lost' | 'back') => void;
}

/** PostgreSQL: the longest wait for a connection of the pool (see createPostgresStore). */
export const CONNECT_TIMEOUT_MS = 3000;

/**
 * PostgreSQL: the longest a statement may go unanswered before the request fails (503) and its
 * connection is dropped. Without it a database that goes silent mid-query (a partition, a frozen
 * host) holds the request until TCP gives up, minutes later. 10 s is far above any statement the
 * request path sends (lookups and single-row writes take milliseconds; the longest, a 500-row batch
 * of a bulk import or export, well under a second, and each statement of a transaction is bounded on
 * its own) yet short enough that a client is answered before its own timeout. Migrations are exempt
 * (withNamedStatements): a schema change on a large table, or waiting for another node's migrations,
 * may rightly take longer.
 */
export const QUERY_TIMEOUT_MS = 10_000;

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
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: statements }) });
  return {
    db,
    dialect: 'sqlite',
    changes,
    ping: async () => { database.prepare('select 1').get(); },
    close: () => db.destroy(),
  };
}

/**
 * SQLite transactions begin IMMEDIATE: each takes the database's write lock at its start (waiting up to
 * busy_timeout for another process's writer), not at its first write. A deferred transaction that read
 * first could not upgrade once another process (the CLI, a second server on the file) had committed
 * meanwhile: SQLite answers SQLITE_BUSY at once rather than wait. And a change that reads its row
 * before writing it needs no statement to lock it (forUpdate). In one process nothing changes:
 * Kysely runs one statement, and one transaction, at a time on its single connection.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * What a select appends to hold its rows until the transaction ends: ` for update` on PostgreSQL;
 * nothing on SQLite, where the transaction already holds the write lock (ImmediateSqliteDriver).
 */
export function forUpdate(db: Executor): RawBuilder<unknown> {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql` for update` : sql``;
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
    // An idle connection whose peer went away silently is noticed by TCP keepalive (probes after
    // 10 s idle instead of the system's 2 hours), so the pool drops it before a request picks it up.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  const changes = createChangeLog();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: withNamedStatements(pool, () => createWriteTracker(changes), options.queryTimeoutMs ?? QUERY_TIMEOUT_MS) }) });
  const listener = await listenForChanges({
    connectionString: options.listenerUrl ?? url,
    // Named so an operator (or a test) can find this node's listening connection in pg_stat_activity.
    application_name: schema ? `latchkey-changes ${schema}` : 'latchkey-changes',
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  }, changes, { ...(options.onChangeFeed ? { onStateChange: options.onChangeFeed } : {}) });
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

/** Kysely's migration lock (postgres-adapter.ts: pg_advisory_lock, or the _xact form inside a transaction). */
const MIGRATION_LOCK = /\bpg_advisory(?:_xact)?_lock\s*\(/i;
/** Schema changes: exempt from the statement bound wherever they run (they wait for table locks). */
const SCHEMA_CHANGE = /^\s*(?:create|alter|drop|comment|reindex|vacuum|analyze|cluster|refresh)\b/i;

/**
 * PostgreSQL plans every unnamed statement anew, and planning a small lookup costs several times its
 * execution. Naming a statement makes each connection parse and plan it once. Only plain DML is
 * named (not DDL, not transaction control), at most `maxNames` distinct texts (IN-lists of varying
 * length must not grow every connection's statement cache without bound). A statement whose result
 * columns changed under it (a migration by another node) is dropped and run unnamed again.
 */
function withNamedStatements(pool: pg.Pool, newTracker: () => WriteTracker, queryTimeoutMs: number, maxNames = 500): PostgresPool {
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
  // pg's per-query query_timeout (client side: it also ends a wait on a silent network, which a
  // server-side statement_timeout cannot). Undefined: unbounded.
  const query = (client: pg.PoolClient, text: string, values: readonly unknown[] | undefined, timeout: number | undefined): Promise<pg.QueryResult> => {
    const name = nameOf(text);
    const bound = timeout === undefined ? {} : { query_timeout: timeout };
    if (!name) return client.query({ text, values: values as unknown[], ...bound });
    return client.query({ name, text, values: values as unknown[], ...bound }).catch((error: { code?: string }) => {
      // 0A000: "cached plan must not change result type".
      if (error?.code !== '0A000') throw error;
      names.delete(text);
      return client.query({ text, values: values as unknown[], ...bound });
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
      // Kysely's migrator runs on one connection that first takes its advisory lock: from then on,
      // this checkout's statements (the lock wait, schema changes, data migrations) are not bounded.
      let migrating = false;
      const wrapped = {
        query(text: unknown, values?: ReadonlyArray<unknown>) {
          if (typeof text !== 'string') return client.query(text as never);
          // A broken connection answers nothing more (a transaction's ROLLBACK would wait behind the
          // timed-out statement for a bound of its own): fail at once; releasing it ends the transaction.
          if (broken) return Promise.reject(broken);
          migrating ||= MIGRATION_LOCK.test(text);
          const timeout = migrating || SCHEMA_CHANGE.test(text) ? undefined : queryTimeoutMs;
          return query(client, text, values, timeout).catch((error: Error) => {
            // The timed-out statement may still be on the wire: its answer, should it come, would be
            // read as the next one's. The connection is destroyed on release, never reused.
            if (error?.message === 'Query read timeout') broken ??= error;
            throw error;
          }).finally(() => writes.ran(text));
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
