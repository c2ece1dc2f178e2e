/**
 * Which tables have changed since a given moment, so that a node may keep the answer of a read in
 * memory and know, before each use, that the database would still give the same answer.
 *
 * Changes made through this process are seen when they become visible to other readers: a write
 * outside a transaction right after it ran, a transaction's writes when it commits (the store's
 * driver reports every statement it runs to a WriteTracker). Changes made by anyone else:
 * - SQLite: `PRAGMA data_version` moves when another connection (another process: the CLI, a second
 *   server) commits; checked on every use, so the answer is exact. It does not say which tables, so
 *   every table counts as changed.
 * - PostgreSQL: triggers (migration 0008) send `NOTIFY latchkey_changes, '<schema>.<table>'` with
 *   every committed write, whoever made it; a dedicated connection listens. Another node's write is
 *   seen once its notification arrives (normally well under a millisecond after the commit; the
 *   README states this window). While that connection is down nothing counts as unchanged; a
 *   connection that died silently is noticed by its missing heartbeat (postgres-changes.ts).
 * Whatever the feed says, the read cache reloads entries older than 1 s (read-cache.ts): a change
 * made elsewhere is seen within that bound even before a lost feed is noticed.
 */

/** The tables whose reads may be cached: each has the notify trigger of migration 0008, 0017, 0032 or 0033 on PostgreSQL. */
export const WATCHED_TABLES = [
  'customers', 'users', 'groups', 'group_members', 'api_tokens', 'site_api_keys', 'applications', 'login_policies', 'webhooks', 'scim_tokens',
] as const;
export type WatchedTable = typeof WATCHED_TABLES[number];

export interface ChangeFeed {
  /** A moment of the feed: take it before a read whose result will be kept. */
  mark(): number;
  /** True when none of `tables` changed after `mark`, here or elsewhere. */
  unchangedSince(mark: number, tables: readonly WatchedTable[]): boolean;
}

/** The writing side: the store's driver and listener report changes here. */
export interface ChangeLog extends ChangeFeed {
  /** Records that `tables` (or, with 'all', every table) changed just now. */
  changed(tables: Iterable<string> | 'all'): void;
  /** While false (PostgreSQL listener down), nothing counts as unchanged. */
  setTrusted(trusted: boolean): void;
}

/**
 * @param foreignChange polled on every check: true when someone else changed the database since the
 *   previous poll (SQLite's data_version).
 */
export function createChangeLog(foreignChange?: () => boolean): ChangeLog {
  // A logical clock: every change takes the next tick, so a change after mark() has a tick > mark.
  let tick = 0;
  let everythingAt = 0;
  let trusted = true;
  const changedAt = new Map<string, number>();

  // Polled at most once per turn of the event loop (a poll is a statement, dear next to a kept
  // answer): every request handled in this turn had arrived before the poll, so none of them can
  // follow a foreign commit that the poll missed. The flag drops in this turn's check phase.
  let polledThisTurn = false;
  const endTurn = () => { polledThisTurn = false; };
  const pollForeign = () => {
    if (polledThisTurn || !foreignChange) return;
    polledThisTurn = true;
    setImmediate(endTurn);
    if (foreignChange()) log.changed('all');
  };

  const log: ChangeLog = {
    mark: () => tick,
    unchangedSince(mark, tables) {
      pollForeign();
      if (!trusted || everythingAt > mark) return false;
      for (const table of tables) if ((changedAt.get(table) ?? 0) > mark) return false;
      return true;
    },
    changed(tables) {
      tick++;
      if (tables === 'all') everythingAt = tick;
      else for (const table of tables) changedAt.set(table, tick);
    },
    setTrusted(value) {
      if (value && !trusted) log.changed('all');
      trusted = value;
    },
  };
  return log;
}

/** What a statement does to the database, read from its SQL text. */
type StatementKind =
  | { kind: 'read' }
  | { kind: 'begin' | 'commit' | 'rollback' }
  | { kind: 'write'; tables: readonly string[] | 'all' };

const READ: StatementKind = { kind: 'read' };
const IDENTIFIER = String.raw`"?([A-Za-z_][A-Za-z0-9_]*)"?`;
const WRITES = [
  new RegExp(String.raw`^\s*insert\s+(?:or\s+\w+\s+)?into\s+${IDENTIFIER}`, 'i'),
  new RegExp(String.raw`^\s*update\s+${IDENTIFIER}`, 'i'),
  new RegExp(String.raw`^\s*delete\s+from\s+${IDENTIFIER}`, 'i'),
];

/** Exported for its test. Anything not recognised counts as a write to every table. */
export function classifyStatement(text: string): StatementKind {
  if (/^\s*(select|pragma|explain|savepoint|release|set|show|listen|unlisten)\b/i.test(text)) return READ;
  if (/^\s*(begin|start\s+transaction)\b/i.test(text)) return { kind: 'begin' };
  if (/^\s*(commit|end)\b/i.test(text)) return { kind: 'commit' };
  if (/^\s*rollback\s*$/i.test(text)) return { kind: 'rollback' };
  for (const pattern of WRITES) {
    const match = pattern.exec(text);
    if (match) return { kind: 'write', tables: [match[1].toLowerCase()] };
  }
  // A CTE may hide a write anywhere in its text.
  if (/^\s*with\b/i.test(text) && !/\b(insert|update|delete)\b/i.test(text)) return READ;
  return { kind: 'write', tables: 'all' };
}

const kinds = new Map<string, StatementKind>();

function kindOf(text: string): StatementKind {
  let kind = kinds.get(text);
  if (!kind) {
    kind = classifyStatement(text);
    // Texts are few (built queries), but IN-lists of varying length must not grow this for ever.
    if (kinds.size >= 1000) kinds.clear();
    kinds.set(text, kind);
  }
  return kind;
}

export interface WriteTracker {
  /** Call after each statement of the connection has run, or failed (then a change is assumed). */
  ran(text: string): void;
}

/** Follows one connection's statements and reports its writes to `log` when they become visible. */
export function createWriteTracker(log: ChangeLog): WriteTracker {
  let inTransaction = false;
  let pending = new Set<string>();
  let pendingAll = false;
  return {
    ran(text) {
      const statement = kindOf(text);
      switch (statement.kind) {
        case 'read': return;
        case 'begin': inTransaction = true; pending = new Set(); pendingAll = false; return;
        case 'commit':
          inTransaction = false;
          if (pendingAll) log.changed('all');
          else if (pending.size) log.changed(pending);
          return;
        case 'rollback': inTransaction = false; return;
        case 'write':
          if (!inTransaction) log.changed(statement.tables);
          else if (statement.tables === 'all') pendingAll = true;
          else for (const table of statement.tables) pending.add(table);
      }
    },
  };
}
