/** What `latchkey --help`, `latchkey <group> --help` and `latchkey <command> --help` print. Needs no database and no services. */
import type { Command } from './command.ts';

/** The two switches every command takes; each command describes its other options itself. */
export const COMMON_OPTIONS: Record<string, string> = {
  json: 'print the result as one JSON line (errors as JSON on stderr)',
  help: 'show this help (also -h)',
};

const DATA_DIR_NOTE = (dataDir: string, database: string) => [
  `Data directory: ${dataDir} (LATCHKEY_DATA_DIR; default ./data in the current directory)`,
  `Database:       ${database} (LATCHKEY_DATABASE_URL)`,
];

/** The options a command's usage line names, in order, with --help last. */
export function optionNames(command: Command): string[] {
  const names = [...new Set([...command.usage.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]))];
  if (!names.includes('help')) names.push('help');
  return names;
}

/** The group a command belongs to: its first word ("customer", "app", …), or "site api-key" for the site's. */
export function groupOf(command: Command): string {
  const words = command.name.split(' ');
  return words[0] === 'site' ? words.slice(0, 2).join(' ') : words[0];
}

function commandLines(commands: Command[]): string[] {
  // A usage too long for the column gets its summary on the next line; a blank line between groups.
  const line = (c: Command) => (c.usage.length <= 64 ? `  ${c.usage.padEnd(64)} ${c.summary}` : `  ${c.usage}\n  ${''.padEnd(64)} ${c.summary}`);
  return commands.flatMap((c, i) => (i > 0 && groupOf(commands[i - 1]) !== groupOf(c) ? ['', line(c)] : [line(c)]));
}

export function generalHelp(commands: Command[], dataDir: string, database: string): string {
  return [
    'Usage: latchkey <command> [options] [--json]',
    '       latchkey <command> --help | latchkey <group> --help | latchkey --version',
    '',
    ...commandLines(commands),
    '',
    'Works on the configured database directly (the same environment as the server), also while it runs.',
    ...DATA_DIR_NOTE(dataDir, database),
    'Exit codes: 0 done, 1 refused or failed, 2 usage error or no database.',
  ].join('\n');
}

/** The commands whose names start with `words` (`customer`, `site`, `site api-token`), or none. */
export function commandsOfGroup(commands: Command[], words: string): Command[] {
  return words === '' ? [] : commands.filter((c) => c.name.startsWith(words + ' '));
}

export function groupHelp(group: string, commands: Command[], dataDir: string, database: string): string {
  return [
    `Usage: latchkey ${group} <command> [options] [--json]`,
    `       latchkey ${group} <command> --help`,
    '',
    ...commandLines(commands),
    '',
    ...DATA_DIR_NOTE(dataDir, database),
  ].join('\n');
}

export function commandHelp(command: Command, dataDir: string, database: string): string {
  const names = optionNames(command);
  const width = Math.max(...names.map((n) => n.length)) + 4;
  return [
    `Usage: latchkey ${command.usage}`,
    '',
    command.summary,
    '',
    'Options:',
    ...names.map((n) => `  ${`--${n}`.padEnd(width)} ${command.options[n] ?? COMMON_OPTIONS[n] ?? ''}`.trimEnd()),
    '',
    ...DATA_DIR_NOTE(dataDir, database),
  ].join('\n');
}
