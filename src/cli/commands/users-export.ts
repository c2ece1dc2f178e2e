/** `users export`: a customer's users in the import's format, streamed to stdout or a file. */
import { createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';
import { formatOf, progressIntervalMs } from './users-import.ts';
import { createProgress } from '../progress.ts';

export const usersExport: Command = {
  name: 'users export',
  usage: 'users export --customer-key K [--format csv|jsonl] [--out FILE] [--include-password-hashes] [--progress-seconds N] [--json]',
  summary: 'Write the users in the import format (CSV by default) to stdout or a file; hashes only when asked.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'format': "csv or jsonl (default: jsonl when --out ends in .jsonl or .ndjson, else csv)", 'out': "write to this file (created 0600) instead of stdout", 'include-password-hashes': "add each user's password hash (argon2id, or an imported argon2i or bcrypt hash)", 'progress-seconds': "without a terminal, a progress line on stderr every N seconds (default 5; 0: after every 500 users)" },
  async run(args, { app, auditContext }) {
    if (args.positionals.length > 2) throw new UsageError(`unexpected argument ${args.positionals[2]}`);
    const out = stringFlag(args, 'out');
    const hashesFlag = args.flags['include-password-hashes'];
    if (hashesFlag !== undefined && hashesFlag !== true) throw new UsageError('--include-password-hashes takes no value');
    const includePasswordHashes = hashesFlag === true;
    const format = args.flags.format === undefined && (out === undefined || !/\.(jsonl|ndjson)$/i.test(out)) ? 'csv' : formatOf(args, out);
    const intervalMs = progressIntervalMs(args);
    const customerId = await customerIdOf(args, app);
    // The CSV writer loads here, not with --help.
    const { EXPORT_PAGE_SIZE } = await import('../../identity/users/export.ts');
    const { formatExport } = await import('../../identity/users/export-format.ts');
    const progress = createProgress({ task: 'users export', unit: 'users', total: await app.services.userExport.countUsers(customerId), intervalMs });
    const records = app.services.userExport.exportUsers(customerId, { includePasswordHashes });
    // Lines written, the CSV header aside.
    let count = format === 'jsonl' ? 0 : -1;
    const counting = new Transform({
      writableObjectMode: true,
      transform(line: string, _encoding, done) {
        count++;
        if (count > 0 && count % EXPORT_PAGE_SIZE === 0) progress.update(count);
        done(null, line);
      },
    });
    // 0600: hashes, e-mail addresses and phone numbers are personal data.
    const target = out === undefined ? process.stdout : createWriteStream(out, { mode: 0o600 });
    try {
      await pipeline(Readable.from(formatExport(records, format, includePasswordHashes)), counting, target, { end: out !== undefined });
    } catch (error) {
      progress.abort();
      throw error;
    }
    progress.finish(Math.max(count, 0));
    if (out === undefined) return { json: undefined, text: '', printed: true };
    return { json: { exported: count, out }, text: `Exported ${count} users to ${out}.` };
  },
};
