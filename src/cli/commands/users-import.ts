/** `users import FILE`: creates or updates a customer's users from CSV or JSON lines (DESIGN.md "Bulk import and export"). */
import { createReadStream, statSync } from 'node:fs';
import type { Composition } from '../../compose.ts';
import { createUserImportService, type ImportSummary } from '../../identity/users/import.ts';
import { checkColumns } from '../../identity/users/import-row.ts';
import { BadHeader, formatOfFileName, readCsv, readJsonLines, type ImportFormat } from '../../identity/users/import-rows.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { createProgressBar } from '../progress.ts';
import { customerIdOf } from './customer-key.ts';

/** The format `--format` names, else the file's extension says. @throws UsageError */
export function formatOf(args: ParsedArgs, fileName: string | undefined): ImportFormat {
  const given = stringFlag(args, 'format');
  if (given !== undefined) {
    if (given !== 'csv' && given !== 'jsonl') throw new UsageError('--format must be csv or jsonl');
    return given;
  }
  const format = fileName === undefined ? undefined : formatOfFileName(fileName);
  if (format === undefined) throw new UsageError('say --format csv or --format jsonl (the file name ends neither in .csv nor in .jsonl/.ndjson)');
  return format;
}

function createImportService(app: Composition) {
  return createUserImportService({ db: app.store.db, users: app.services.users, groups: app.services.groups });
}

function summaryText(summary: ImportSummary): string {
  return [
    `${summary.created} created, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.failed} failed.`,
    ...summary.errors.map((e) => `  line ${e.line}: ${e.message}`),
  ].join('\n');
}

export const usersImport: Command = {
  name: 'users import',
  usage: 'users import FILE --customer-key K [--format csv|jsonl] [--json]',
  summary: 'Create or update users, groups and memberships from CSV or JSON lines; run again, it changes nothing.',
  async run(args, { app }) {
    const file = args.positionals[2];
    if (file === undefined || args.positionals.length > 3) throw new UsageError('give one FILE to import');
    const format = formatOf(args, file);
    let size: number;
    try {
      const stat = statSync(file);
      if (!stat.isFile()) throw new Error('not a file');
      size = stat.size;
    } catch {
      throw new UsageError(`cannot read ${file}`);
    }
    const customerId = await customerIdOf(args, app);
    const input = createReadStream(file);
    const records = format === 'csv'
      ? readCsv(input, (columns) => checkColumns(columns))
      : readJsonLines(input);
    const progress = createProgressBar();
    let summary: ImportSummary;
    try {
      summary = await createImportService(app).importUsers(customerId, records, format, {
        onBatch: (s) => progress.update(size === 0 ? 1 : input.bytesRead / size,
          `${s.created + s.updated + s.unchanged + s.failed} rows (${s.failed} failed)`),
      });
    } catch (error) {
      if (error instanceof BadHeader) throw new UsageError(`${file}: ${error.message}`);
      throw error;
    } finally {
      progress.done();
      input.destroy();
    }
    return { json: summary, text: summaryText(summary), exitCode: summary.failed > 0 ? 1 : 0 };
  },
};
