/**
 * Bulk import: records in, users created or updated in batches of one transaction each, every row by
 * the rules of users/create or users/update (the users service's own createIn/updateIn). A row equal to
 * what is stored writes nothing. A bad row is rolled back to its savepoint, reported and skipped; the
 * batch goes on. Batches commit one by one, so an import stopped half-way and run again ends in the
 * same state: rows already in are unchanged the second time.
 */
import type { ControlledTransaction, Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { LatchkeyError } from '../../lib/errors.ts';
import { hashPassword, verifyPassword } from '../../lib/passwords.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { GroupsService } from '../groups/service.ts';
import { findUsersByUsernames, type UserWithHash } from './import-repo.ts';
import { toImportRow, type ImportRow } from './import-row.ts';
import type { ImportFormat, ImportRecord } from './import-rows.ts';
import { normalise } from './repo.ts';
import type { UsersService } from './service.ts';

export interface ImportSummary {
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
  errors: { line: number; message: string }[];
}

export interface ImportOptions {
  /** Rows written per transaction. */
  batchSize?: number;
  /** After each committed batch, with the counts so far (a progress bar; tests stop an import here). */
  onBatch?: (summary: ImportSummary) => void | Promise<void>;
}

export interface UserImportService {
  /** @throws only what stops the whole import (the database, or onBatch); bad rows are in the summary. */
  importUsers(customerId: number, records: AsyncIterable<ImportRecord>, format: ImportFormat, context: AuditContext, options?: ImportOptions): Promise<ImportSummary>;
}

export const IMPORT_BATCH_SIZE = 500;

/** A matched user as the batch found it, with its memberships. */
interface Stored extends UserWithHash { groups: string[] }

/** What hashing decided for a row, before the transaction (hashing there would hold the write lock). */
interface PasswordPlan {
  /** The hash to store; undefined when the row's password is already the stored one. */
  newHash?: string;
  /** The stored hash the row's plain password was checked against. */
  checkedAgainst?: string | null;
}

/** SQLite's other writer (the running server) or a PostgreSQL deadlock: the whole batch is tried again. */
function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) || code === '40P01' || code === '40001';
}

const sameGroups = (given: string[], stored: string[]): boolean => {
  const a = new Set(given.map(normalise));
  const b = new Set(stored.map(normalise));
  return a.size === b.size && [...a].every((name) => b.has(name));
};

/** Whether writing the row would change the stored user (password aside). */
function changesFields(row: ImportRow, stored: Stored): boolean {
  const { input } = row;
  const user = stored.user;
  if (input.email !== undefined && input.email !== user.email) return true;
  if (input.firstName !== undefined && input.firstName !== user.firstName) return true;
  if (input.lastName !== undefined && input.lastName !== user.lastName) return true;
  if (input.phone !== undefined && input.phone !== user.phone) return true;
  if (input.alternateEmail !== undefined && input.alternateEmail !== user.alternateEmail) return true;
  for (const [name, value] of Object.entries(input.customAttributes)) if (user.customAttributes[name] !== value) return true;
  return input.groups !== undefined && !sameGroups(input.groups.map((g) => g.name), stored.groups);
}

function describeFailure(error: unknown): string | undefined {
  if (isUniqueViolation(error)) return 'a user with this email already exists';
  if (error instanceof LatchkeyError) return error.message;
  return undefined;
}

/** The import itself as an event's target: its counts are its name (the rows' users have their own events). */
const importTarget = (summary: ImportSummary) => ({
  type: 'import', id: '', name: `${summary.created} created, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.failed} failed`,
});

/** Each changed user's event is written by createIn/updateIn in the row's savepoint; import.completed ends the run. */
export function createUserImportService(deps: { db: Kysely<Database>; users: UsersService; groups: GroupsService; audit: AuditRecorder }): UserImportService {
  const { db, users, groups } = deps;

  async function readStored(exec: Kysely<Database> | ControlledTransaction<Database>, customerId: number, rows: ImportRow[]): Promise<Map<string, Stored>> {
    const found = await findUsersByUsernames(exec, customerId, rows.map((r) => r.input.username));
    const names = await groups.groupNamesByUser(exec, customerId, found.map((f) => f.user.id));
    return new Map(found.map((f) => [normalise(f.user.username), { ...f, groups: names.get(f.user.id) ?? [] }]));
  }

  /** Hashes new passwords and checks given ones against the stored hash, all at once (argon2's pool bounds it). */
  async function planPasswords(rows: ImportRow[], stored: Map<string, Stored>): Promise<PasswordPlan[]> {
    return Promise.all(rows.map(async (row): Promise<PasswordPlan> => {
      const current = stored.get(normalise(row.input.username));
      if (row.passwordHash !== undefined) return row.passwordHash === current?.passwordHash ? {} : { newHash: row.passwordHash };
      if (row.password === undefined) return {};
      const checkedAgainst = current?.passwordHash ?? null;
      if (checkedAgainst !== null && await verifyPassword(checkedAgainst, row.password)) return { checkedAgainst };
      return { newHash: await hashPassword(row.password), checkedAgainst };
    }));
  }

  /** The stored hash moved since the plan (a login rehashed it, a concurrent change): decide again. */
  async function settlePassword(row: ImportRow, plan: PasswordPlan, current: Stored | undefined): Promise<string | undefined> {
    const storedHash = current?.passwordHash ?? null;
    if (row.passwordHash !== undefined) return row.passwordHash === storedHash ? undefined : row.passwordHash;
    if (row.password === undefined) return undefined;
    if (plan.newHash !== undefined || plan.checkedAgainst === storedHash) return plan.newHash;
    if (storedHash !== null && await verifyPassword(storedHash, row.password)) return undefined;
    return hashPassword(row.password);
  }

  async function writeBatch(customerId: number, rows: ImportRow[], plans: PasswordPlan[], summary: ImportSummary, context: AuditContext): Promise<void> {
    const trx = await db.startTransaction().execute();
    const counts = { created: 0, updated: 0, unchanged: 0, failed: 0, errors: [] as ImportSummary['errors'] };
    try {
      const groupNames = [...new Map(rows.flatMap((r) => r.input.groups ?? []).map((g) => [normalise(g.name), g.name])).values()];
      await groups.createMissing(trx, customerId, groupNames, context);
      const stored = await readStored(trx, customerId, rows);
      for (const [i, row] of rows.entries()) {
        const current = stored.get(normalise(row.input.username));
        const newHash = await settlePassword(row, plans[i], current);
        if (current && newHash === undefined && !changesFields(row, current)) {
          counts.unchanged++;
          continue;
        }
        const savepoint = await trx.savepoint('import_row').execute();
        try {
          if (current) {
            // A matched user keeps its stored username spelling.
            await users.updateIn(savepoint, customerId, { ...row.input, username: current.user.username }, newHash, context);
            counts.updated++;
          } else {
            // An empty name cell is the empty name users/create accepts (`"firstName": ""`): the
            // export writes a user created without one so, and it must read back (DESIGN: lossless).
            const input = { ...row.input, firstName: row.input.firstName ?? '', lastName: row.input.lastName ?? '' };
            await users.createIn(savepoint, customerId, input, newHash ?? null, context);
            counts.created++;
          }
          await savepoint.releaseSavepoint('import_row').execute();
        } catch (error) {
          const message = describeFailure(error);
          if (message === undefined) throw error;
          await savepoint.rollbackToSavepoint('import_row').execute();
          counts.failed++;
          counts.errors.push({ line: row.line, message });
        }
      }
      await trx.commit().execute();
    } catch (error) {
      await trx.rollback().execute().catch(() => undefined);
      throw error;
    }
    summary.created += counts.created;
    summary.updated += counts.updated;
    summary.unchanged += counts.unchanged;
    summary.failed += counts.failed;
    summary.errors.push(...counts.errors);
  }

  async function importBatch(customerId: number, rows: ImportRow[], summary: ImportSummary, context: AuditContext): Promise<void> {
    if (rows.length === 0) return;
    const plans = await planPasswords(rows, await readStored(db, customerId, rows));
    for (let attempt = 1; ; attempt++) {
      try {
        return await writeBatch(customerId, rows, plans, summary, context);
      } catch (error) {
        if (!isRetryable(error) || attempt >= 5) throw error;
      }
    }
  }

  return {
    async importUsers(customerId, records, format, context, options = {}) {
      const batchSize = options.batchSize ?? IMPORT_BATCH_SIZE;
      const summary: ImportSummary = { created: 0, updated: 0, unchanged: 0, failed: 0, errors: [] };
      let batch: ImportRow[] = [];
      let usernames = new Set<string>();
      // Read errors are reported in line order with the rows around them.
      let pendingErrors: ImportSummary['errors'] = [];
      const flush = async () => {
        const before = summary.errors.length;
        await importBatch(customerId, batch, summary, context);
        // This batch's errors all come after the earlier batches': sorting them alone keeps the list in line order.
        const fresh = summary.errors.splice(before).concat(pendingErrors).sort((a, b) => a.line - b.line);
        for (const error of fresh) summary.errors.push(error);
        summary.failed += pendingErrors.length;
        batch = [];
        usernames = new Set();
        pendingErrors = [];
        await options.onBatch?.(summary);
      };
      for await (const record of records) {
        if (record.error !== undefined) {
          pendingErrors.push({ line: record.line, message: record.error });
          continue;
        }
        let row: ImportRow;
        try {
          row = toImportRow(record, format);
        } catch (error) {
          if (!(error instanceof LatchkeyError)) throw error;
          pendingErrors.push({ line: record.line, message: error.message });
          continue;
        }
        // A username twice in one batch: the second must see the first one's write.
        const key = normalise(row.input.username);
        if (usernames.has(key)) await flush();
        batch.push(row);
        usernames.add(key);
        if (batch.length >= batchSize) await flush();
      }
      if (batch.length > 0 || pendingErrors.length > 0) await flush();
      await deps.audit.record(db, customerId, { action: 'import.completed', target: importTarget(summary) }, context);
      return summary;
    },
  };
}
