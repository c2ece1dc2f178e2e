/**
 * `npx latchkey <command>`: works on the configured database directly (same env as the server).
 * Every command takes --json and --help. Exit codes: 0 done, 1 refused or failed, 2 usage or no database.
 * --help and --version open nothing: no database, no services.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../config.ts';
import { LatchkeyError } from '../lib/errors.ts';
import { parseArgs, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { commands } from './registry.ts';
import { commandHelp, commandsOfGroup, generalHelp, groupHelp } from './help.ts';


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

/** The operating-system account running the CLI (the audit log's actor); its uid when it has no name (a container). */
function osUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER || String(process.getuid?.() ?? '');
  }
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
  const dataDir = config?.dataDir ?? '(configuration error)';
  const database = config === undefined ? '(configuration error)' : isPostgresUrl(config.databaseUrl) ? 'PostgreSQL' : config.databaseUrl;
  // `latchkey customer --help` (or `latchkey customer`): that group's commands only.
  const group = command ? [] : commandsOfGroup(commands, words);
  const help = () => (command ? commandHelp(command, dataDir, database) : group.length > 0 ? groupHelp(words, group, dataDir, database) : generalHelp(commands, dataDir, database));
  if (args.flags.help) {
    process.stdout.write(help() + '\n');
    return 0;
  }
  if (!command) {
    if (json) fail(json, 'usage', words && group.length === 0 ? `unknown command: ${words}` : words ? `${words}: which command? (latchkey ${words} --help)` : 'no command given');
    else process.stderr.write((words && group.length === 0 ? `latchkey: unknown command: ${words}\n\n` : '') + help() + '\n');
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
    const { compose } = await import('../compose/index.ts');
    app = await compose(config);
    // Every change the command makes is the operator's, as the system names them; one id for the whole run.
    const auditContext = { actor: { type: 'cli', id: osUserName() }, ip: '', requestId: randomUUID(), correlationId: '' } as const;
    const result = await command.run(args, { app, auditContext });
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
