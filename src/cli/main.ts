/**
 * `npx latchkey <command>`: works on the configured database directly (same env as the server).
 * Every command takes --json and --help. Exit codes: 0 done, 1 refused or failed, 2 usage or no database.
 * --help and --version open nothing: no database, no services.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../config.ts';
import { LatchkeyError } from '../lib/errors.ts';
import { parseArgs, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { appCommands } from './commands/app.ts';
import { apiTokenCreate, apiTokenList, apiTokenPurgeExpired, apiTokenRevoke } from './commands/api-token.ts';
import { customerCreate, customerList, customerPasswordExpiry, customerRotateKey } from './commands/customer.ts';
import { customerSetPassword } from './commands/customer-set-password.ts';
import { oauthClientCommands } from './commands/oauth-client.ts';
import { policyCommands } from './commands/policy.ts';
import { siteCommands } from './commands/site.ts';
import { usersExport } from './commands/users-export.ts';
import { usersImport } from './commands/users-import.ts';
import { commandHelp, generalHelp } from './help.ts';

const commands: Command[] = [customerCreate, customerList, customerRotateKey, customerPasswordExpiry, ...siteCommands];
commands.push(customerSetPassword);
commands.push(apiTokenCreate, apiTokenList, apiTokenPurgeExpired, apiTokenRevoke);
commands.push(...appCommands, ...policyCommands, ...oauthClientCommands);
commands.push(usersImport, usersExport);

/** The package's version: package.json above this file (src/cli/ when run from the sources, dist/ from the bundle). */
export function version(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

/** As store/db.ts decides (not imported from there: it loads the database drivers). */
const isPostgresUrl = (url: string) => /^postgres(ql)?:\/\//i.test(url);

function fail(json: boolean, code: string, message: string, usage?: string): void {
  if (json) process.stderr.write(JSON.stringify({ error: code, message }) + '\n');
  else process.stderr.write(`latchkey: ${message}\n${usage ? `usage: latchkey ${usage}\n` : ''}`);
}

/**
 * Why the command may not run on this configuration, or undefined. The CLI never makes a data directory,
 * a database or a master key as a side effect (run from the wrong directory, it would start an empty one
 * and a new master key); only a command that says it creates them may.
 */
function missingStore(config: Config, command: Command): string | undefined {
  if (command.createsDatabase) return undefined;
  const hint = `the data directory is ${config.dataDir} (LATCHKEY_DATA_DIR, default ./data in the current directory): run latchkey where the server runs, set LATCHKEY_DATA_DIR, or create a customer with "latchkey customer create --email E"`;
  if (!isPostgresUrl(config.databaseUrl) && !existsSync(config.databaseUrl)) return `no database at ${config.databaseUrl}; ${hint}`;
  if (config.masterKey === undefined && !existsSync(join(config.dataDir, 'master.key'))) {
    return `no master key: LATCHKEY_MASTER_KEY is not set and ${join(config.dataDir, 'master.key')} does not exist; ${hint}`;
  }
  return undefined;
}

async function main(argv: string[]): Promise<number> {
  // Known before parsing, so even a malformed command line is answered in JSON when asked.
  const json = argv.includes('--json');
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    process.stdout.write(version() + '\n');
    return 0;
  }
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
  let config: Config | undefined;
  let configProblem: Error | undefined;
  try {
    config = loadConfig();
  } catch (error) {
    configProblem = error as Error;
  }
  if (args.flags.help || args.flags.h) {
    const dataDir = config?.dataDir ?? '(configuration error)';
    const database = config === undefined ? '(configuration error)' : isPostgresUrl(config.databaseUrl) ? 'PostgreSQL' : config.databaseUrl;
    process.stdout.write((command ? commandHelp(command, dataDir, database) : generalHelp(commands, dataDir, database)) + '\n');
    return 0;
  }
  if (!command) {
    if (json) fail(json, 'usage', words ? `unknown command: ${words}` : 'no command given');
    else process.stderr.write((words ? `latchkey: unknown command: ${words}\n\n` : '') + generalHelp(commands, config?.dataDir ?? '?', config?.databaseUrl ?? '?') + '\n');
    return 2;
  }
  if (config === undefined) {
    fail(json, 'error', configProblem?.message ?? 'configuration error');
    return 1;
  }
  const missing = missingStore(config, command);
  if (missing !== undefined) {
    fail(json, 'no_database', missing);
    return 2;
  }
  if (!isPostgresUrl(config.databaseUrl) && !existsSync(config.databaseUrl)) {
    process.stderr.write(`latchkey: creating a new database at ${config.databaseUrl}\n`);
  }
  let app;
  try {
    // Loaded only for a command that runs: --help and --version stay light.
    const { compose } = await import('../compose.ts');
    app = await compose(config);
    const result = await command.run(args, { app });
    if (!result.printed) process.stdout.write((json ? JSON.stringify(result.json) : result.text) + '\n');
    return result.exitCode ?? 0;
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
