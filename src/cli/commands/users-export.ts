/** `users export`: a customer's users in the import's format, streamed to stdout or a file. */
import { createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createUserExportService } from '../../identity/users/export.ts';
import { formatExport } from '../../identity/users/export-format.ts';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';
import { formatOf } from './users-import.ts';

export const usersExport: Command = {
  name: 'users export',
  usage: 'users export --customer-key K [--format csv|jsonl] [--out FILE] [--include-password-hashes] [--json]',
  summary: 'Write the users in the import format (CSV by default) to stdout or a file; hashes only when asked.',
  async run(args, { app }) {
    if (args.positionals.length > 2) throw new UsageError(`unexpected argument ${args.positionals[2]}`);
    const out = stringFlag(args, 'out');
    const hashesFlag = args.flags['include-password-hashes'];
    if (hashesFlag !== undefined && hashesFlag !== true) throw new UsageError('--include-password-hashes takes no value');
    const includePasswordHashes = hashesFlag === true;
    const format = args.flags.format === undefined && (out === undefined || !/\.(jsonl|ndjson)$/i.test(out)) ? 'csv' : formatOf(args, out);
    const customerId = await customerIdOf(args, app);
    const records = createUserExportService({ db: app.store.db, groups: app.services.groups })
      .exportUsers(customerId, { includePasswordHashes });
    let count = -1;
    const counting = new Transform({
      writableObjectMode: true,
      transform(line: string, _encoding, done) {
        count++;
        done(null, line);
      },
    });
    if (format === 'jsonl') count = 0;
    // 0600: hashes, e-mail addresses and phone numbers are personal data.
    const target = out === undefined ? process.stdout : createWriteStream(out, { mode: 0o600 });
    await pipeline(Readable.from(formatExport(records, format, includePasswordHashes)), counting, target, { end: out !== undefined });
    if (out === undefined) return { json: undefined, text: '', printed: true };
    return { json: { exported: count, out }, text: `Exported ${count} users to ${out}.` };
  },
};
