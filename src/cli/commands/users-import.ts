/** `users import FILE`: creates or updates a customer's users from CSV or JSON lines (DESIGN.md "Bulk import and export"). */
import { createReadStream, statSync } from 'node:fs';
import type { ImportSummary } from '../../identity/users/import.ts';
import type { ImportFormat } from '../../identity/users/import-rows.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { createProgress, DEFAULT_PROGRESS_INTERVAL_MS } from '../progress.ts';
import { customerIdOf } from './customer-key.ts';

/** The format a file name says, or undefined (`--format` must then say). */
function formatOfFileName(name: string): ImportFormat | undefined {
  if (/\.csv$/i.test(name)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(name)) return 'jsonl';
  return undefined;
}

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

/** `--progress-seconds N`: how often a line goes to stderr when it is no terminal. @throws UsageError */
export function progressIntervalMs(args: ParsedArgs): number {
  const raw = stringFlag(args, 'progress-seconds');
  if (raw === undefined) return DEFAULT_PROGRESS_INTERVAL_MS;
  if (!/^[0-9]{1,5}$/.test(raw)) throw new UsageError('--progress-seconds must be a whole number of seconds');
  return Number(raw) * 1000;
}

const countsText = (s: ImportSummary) => `${s.created} created, ${s.updated} updated, ${s.unchanged} unchanged, ${s.failed} failed`;

function summaryText(summary: ImportSummary): string {
  return [
    `${countsText(summary)}.`,
    ...summary.errors.map((e) => `  line ${e.line}: ${e.message}`),
  ].join('\n');
}

export const usersImport: Command = {
  name: 'users import',
  usage: 'users import FILE --customer-key K [--format csv|jsonl] [--progress-seconds N] [--json]',
  summary: 'Create or update users, groups and memberships from CSV or JSON lines; run again, it changes nothing.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'format': "csv or jsonl (default: from the file's extension: .csv, .jsonl or .ndjson)", 'progress-seconds': "without a terminal, a progress line on stderr every N seconds (default 5; 0: after every batch of 500 rows)" },
  async run(args, { app, auditContext }) {
    const file = args.positionals[2];
    if (file === undefined || args.positionals.length > 3) throw new UsageError('give one FILE to import');
    const format = formatOf(args, file);
    const intervalMs = progressIntervalMs(args);
    try {
      if (!statSync(file).isFile()) throw new Error('not a file');
    } catch {
      throw new UsageError(`cannot read ${file}`);
    }
    const customerId = await customerIdOf(args, app);
    // The readers (csv-parse) and the row rules load here, not with --help.
    const { BadHeader, countRecords, readCsv, readJsonLines } = await import('../../identity/users/import-rows.ts');
    const { checkColumns } = await import('../../identity/users/import-row.ts');
    // Counted first, so that progress has a whole to measure against (the bytes read run ahead of the rows written).
    const total = await countRecords(file, format);
    const input = createReadStream(file);
    const records = format === 'csv'
      ? readCsv(input, (columns) => checkColumns(columns))
      : readJsonLines(input);
    const progress = createProgress({ task: 'users import', unit: 'rows', total, intervalMs });
    const rows = (s: ImportSummary) => s.created + s.updated + s.unchanged + s.failed;
    let summary: ImportSummary;
    try {
      summary = await app.services.userImport.importUsers(customerId, records, format, auditContext, { onBatch: (s) => progress.update(rows(s)) });
    } catch (error) {
      progress.abort();
      if (error instanceof BadHeader) throw new UsageError(`${file}: ${error.message}`);
      throw error;
    } finally {
      input.destroy();
    }
    progress.finish(rows(summary), countsText(summary));
    return { json: summary, text: summaryText(summary), exitCode: summary.failed > 0 ? 1 : 0 };
  },
};
