/**
 * `npx latchkey <command>`: works on the configured database directly (same env as the server).
 * Every command takes --json. Exit codes: 0 done, 1 refused or failed, 2 usage.
 */
import { compose } from '../compose.ts';
import { loadConfig } from '../config.ts';
import { LatchkeyError } from '../lib/errors.ts';
import { parseArgs, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { appCommands } from './commands/app.ts';
import { apiTokenCreate, apiTokenList, apiTokenPurgeExpired, apiTokenRevoke } from './commands/api-token.ts';
import { customerCreate, customerList, customerPasswordExpiry, customerRotateKey } from './commands/customer.ts';
import { oauthClientCommands } from './commands/oauth-client.ts';
import { policyCommands } from './commands/policy.ts';
import { siteCommands } from './commands/site.ts';

const commands: Command[] = [customerCreate, customerList, customerRotateKey, customerPasswordExpiry, ...siteCommands];
commands.push(apiTokenCreate, apiTokenList, apiTokenRevoke, apiTokenPurgeExpired);
commands.push(...appCommands, ...policyCommands, ...oauthClientCommands);

function help(): string {
  // A usage too long for the column gets its summary on the next line.
  const line = (c: Command) => (c.usage.length <= 64 ? `  ${c.usage.padEnd(64)} ${c.summary}` : `  ${c.usage}\n  ${''.padEnd(64)} ${c.summary}`);
  return ['Usage: latchkey <command> [options] [--json]', '', ...commands.map(line)].join('\n');
}

function fail(json: boolean, code: string, message: string, usage?: string): void {
  if (json) process.stderr.write(JSON.stringify({ error: code, message }) + '\n');
  else process.stderr.write(`latchkey: ${message}\n${usage ? `usage: latchkey ${usage}\n` : ''}`);
}

async function main(argv: string[]): Promise<number> {
  // Known before parsing, so even a malformed command line is answered in JSON when asked.
  const json = argv.includes('--json');
  let args;
  try {
    args = parseArgs(argv);
  } catch (error) {
    fail(json, 'usage', (error as Error).message);
    return 2;
  }
  const words = args.positionals.join(' ');
  const command = commands.filter((c) => words === c.name || words.startsWith(c.name + ' '))
    .sort((a, b) => b.name.length - a.name.length)[0];
  if (args.flags.help) {
    process.stdout.write((command ? `usage: latchkey ${command.usage}\n${command.summary}` : help()) + '\n');
    return 0;
  }
  if (!command) {
    if (json) fail(json, 'usage', words ? `unknown command: ${words}` : 'no command given');
    else process.stderr.write((words ? `latchkey: unknown command: ${words}\n\n` : '') + help() + '\n');
    return 2;
  }
  let app;
  try {
    app = await compose(loadConfig());
    const result = await command.run(args, { app });
    process.stdout.write((json ? JSON.stringify(result.json) : result.text) + '\n');
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      fail(json, 'usage', error.message, command.usage);
      return 2;
    }
    if (error instanceof LatchkeyError) fail(json, error.code, error.message);
    else fail(json, 'error', `unexpected error: ${(error as Error).message}`);
    return 1;
  } finally {
    await app?.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
