/** What `latchkey --help` and `latchkey <command> --help` print. Needs no database and no services. */
import type { Command } from './command.ts';

/** The options the commands take, by name; a command's usage line says which it takes. */
const OPTIONS: Record<string, string> = {
  email: "the customer's e-mail (unique)",
  password: "the customer's password (it appears in the process list: prefer setting it later)",
  name: 'a display name (customer) or a label (API key, API token)',
  'customer-key': 'the numeric customer key (site commands: default LATCHKEY_SITE_CUSTOMER_KEY, else the only customer)',
  days: 'days until a password expires, or off',
  user: "a site user's username or e-mail",
  type: 'basic (used with the username) or bearer (used alone)',
  'expires-days': 'days until it expires (default: the longest the policy allows)',
  id: 'the id shown by create or list',
  methods: 'enabled credential methods, comma-separated',
  'jwt-ttl-seconds': 'lifetime of issued JWTs',
  'jwt-header': 'header carrying JWTs',
  'apikey-header': 'header carrying API keys',
  'editor-group': 'group whose members may write posts',
  'editor-roles': 'user roles that may write posts, comma-separated',
  'admin-group': 'group whose members administer API keys and tokens',
  format: 'csv or jsonl (default: from the file name, else csv on export)',
  out: 'write to this file (0600) instead of stdout',
  'include-password-hashes': 'add a passwordHash column (argon2id, or an imported argon2i/bcrypt hash)',
  json: 'print the result as one JSON line (errors as JSON on stderr)',
  help: 'show this help',
};

const DATA_DIR_NOTE = (dataDir: string, database: string) => [
  `Data directory: ${dataDir} (LATCHKEY_DATA_DIR; default ./data in the current directory)`,
  `Database:       ${database} (LATCHKEY_DATABASE_URL)`,
];

export function generalHelp(commands: Command[], dataDir: string, database: string): string {
  // A usage too long for the column gets its summary on the next line.
  const line = (c: Command) => (c.usage.length <= 64 ? `  ${c.usage.padEnd(64)} ${c.summary}` : `  ${c.usage}\n  ${''.padEnd(64)} ${c.summary}`);
  return [
    'Usage: latchkey <command> [options] [--json]',
    '       latchkey <command> --help | latchkey --version',
    '',
    ...commands.map(line),
    '',
    'Works on the configured database directly (the same environment as the server), also while it runs.',
    ...DATA_DIR_NOTE(dataDir, database),
    'Exit codes: 0 done, 1 refused or failed, 2 usage error or no database.',
  ].join('\n');
}

export function commandHelp(command: Command, dataDir: string, database: string): string {
  const names = [...new Set([...command.usage.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]))];
  if (!names.includes('help')) names.push('help');
  const width = Math.max(...names.map((n) => n.length)) + 4;
  return [
    `Usage: latchkey ${command.usage}`,
    '',
    command.summary,
    '',
    'Options:',
    ...names.map((n) => `  ${`--${n}`.padEnd(width)} ${OPTIONS[n] ?? ''}`.trimEnd()),
    '',
    ...DATA_DIR_NOTE(dataDir, database),
  ].join('\n');
}
