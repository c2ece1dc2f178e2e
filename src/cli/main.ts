/**
 * `npx latchkey <command>`: works on the configured database directly (same env as the server).
 * Every command takes --json. Exit codes: 0 done, 1 refused or failed, 2 usage.
 */
import { compose } from '../compose.ts';
import { loadConfig } from '../config.ts';
import { LatchkeyError } from '../lib/errors.ts';
import { parseArgs, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { customerCreate, customerList, customerPasswordExpiry, customerRotateKey } from './commands/customer.ts';

const commands: Command[] = [customerCreate, customerList, customerRotateKey, customerPasswordExpiry];

function help(): string {
  return ['Usage: latchkey <command> [options] [--json]', '', ...commands.map((c) => `  ${c.usage.padEnd(64)} ${c.summary}`)].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const json = args.flags.json === true;
  const words = args.positionals.join(' ');
  const command = commands.filter((c) => words === c.name || words.startsWith(c.name + ' '))
    .sort((a, b) => b.name.length - a.name.length)[0];
  if (!command || args.flags.help) {
    process[command || args.flags.help ? 'stdout' : 'stderr'].write(help() + '\n');
    return args.flags.help ? 0 : 2;
  }
  let app;
  try {
    app = await compose(loadConfig());
    const result = await command.run(args, { app });
    process.stdout.write((json ? JSON.stringify(result.json) : result.text) + '\n');
    return 0;
  } catch (error) {
    const usage = error instanceof UsageError;
    const message = usage ? `${error.message}\nusage: latchkey ${command.usage}`
      : error instanceof LatchkeyError ? error.message : `unexpected error: ${(error as Error).message}`;
    if (json) process.stderr.write(JSON.stringify({ error: usage ? 'usage' : error instanceof LatchkeyError ? error.code : 'error', message: usage ? (error as Error).message : message }) + '\n');
    else process.stderr.write(`latchkey: ${message}\n`);
    return usage ? 2 : 1;
  } finally {
    await app?.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
