import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMON_OPTIONS, optionNames } from '../src/cli/help.ts';
import { commands } from '../src/cli/registry.ts';
import { ROOT } from './helpers/paths.ts';

const BIN = join(ROOT, 'bin', 'latchkey.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Run { code: number; stdout: string; stderr: string }

/** Runs the CLI as a user would, from `cwd`, with no LATCHKEY_* setting but those given. */
function cli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('LATCHKEY_')) clean[key] = value;
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { ...clean, ...env } }, (error, stdout, stderr) => {
      done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('--version prints the package version', async (t) => {
  const dir = scratch(t);
  assert.deepEqual(await cli(dir, ['--version']), { code: 0, stdout: `${VERSION}\n`, stderr: '' });
  assert.ok(!existsSync(join(dir, 'data')));
});

test('--help lists every command and the data directory, and every command has its own --help', async (t) => {
  const dir = scratch(t);
  const help = await cli(dir, ['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: latchkey <command>/);
  assert.ok(help.stdout.includes(`Data directory: ${join(dir, 'data')}`), help.stdout);
  const names = [...help.stdout.matchAll(/^ {2}((?:customer|site)(?: [a-z-]+)+?) (?=--|\[|\s)/gm)].map((m) => m[1]);
  assert.ok(names.length >= 14, `commands found in --help: ${names.join(', ')}`);
  // Four at a time: each is a process start (loading the CLI bundle), and the suite leaves cores idle.
  const helps = new Map<string, Run>();
  for (let i = 0; i < names.length; i += 4) {
    const batch = names.slice(i, i + 4);
    const runs = await Promise.all(batch.map((name) => cli(dir, [...name.split(' '), '--help'])));
    batch.forEach((name, j) => helps.set(name, runs[j]!));
  }
  for (const name of names) {
    const one = helps.get(name)!;
    assert.equal(one.code, 0, `${name} --help: ${one.stderr}`);
    assert.ok(one.stdout.startsWith(`Usage: latchkey ${name}`), `${name} --help: ${one.stdout}`);
    assert.match(one.stdout, /\nOptions:\n(\s+--[a-z-]+.*\n)+/, `${name} --help lists its options`);
    assert.match(one.stdout, /  --json +print the result as one JSON line/);
    // Every option line says what the option does.
    for (const line of one.stdout.split('\n').filter((l) => /^ {2}--/.test(l))) assert.match(line, /^ {2}--[a-z-]+ +\S/, `${name} --help: ${line}`);
  }
  assert.ok(!existsSync(join(dir, 'data')), '--help creates nothing');
});

test('a command refuses, exit 2, when the data directory has no database, and creates nothing', async (t) => {
  const dir = scratch(t);
  const text = await cli(dir, ['customer', 'list']);
  assert.equal(text.code, 2);
  assert.equal(text.stdout, '');
  assert.ok(text.stderr.includes(`no database at ${join(dir, 'data', 'latchkey.sqlite')}`), text.stderr);
  assert.ok(text.stderr.includes(`the data directory is ${join(dir, 'data')}`), text.stderr);
  const json = await cli(dir, ['site', 'api-key', 'list', '--json'], { LATCHKEY_DATA_DIR: join(dir, 'elsewhere') });
  assert.equal(json.code, 2);
  assert.equal(JSON.parse(json.stderr).error, 'no_database');
  assert.ok(!existsSync(join(dir, 'data')) && !existsSync(join(dir, 'elsewhere')), 'nothing was created');
});

test('customer create makes the data directory, says so, and later commands use it', async (t) => {
  const dir = scratch(t);
  const created = await cli(dir, ['customer', 'create', '--email', 'owner@example.com', '--json']);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.stderr, `latchkey: creating a new database at ${join(dir, 'data', 'latchkey.sqlite')}\n`);
  const customer = JSON.parse(created.stdout) as { customerId: number; customerKey: number; apiKey: string };
  assert.ok(existsSync(join(dir, 'data', 'master.key')));
  const listed = await cli(dir, ['customer', 'list', '--json']);
  assert.deepEqual({ ...listed, stdout: JSON.parse(listed.stdout) }, {
    code: 0, stderr: '', stdout: [{ customerId: customer.customerId, customerKey: customer.customerKey, email: 'owner@example.com', name: 'example.com' }],
  });
});

test('every option of every command is described, in words of its own', () => {
  // Options that mean the same wherever they appear; any other text shared by two commands was copied.
  const shared = new Set([...Object.keys(COMMON_OPTIONS), 'customer-key']);
  const seen = new Map<string, string>();
  for (const command of commands) {
    const names = optionNames(command);
    assert.deepEqual(Object.keys(command.options).filter((n) => !names.includes(n)), [], `${command.name} describes options its usage does not name`);
    const texts = new Set<string>();
    for (const name of names) {
      const text = command.options[name] ?? COMMON_OPTIONS[name];
      assert.ok(text !== undefined && text.trim().length >= 10, `${command.name} --${name} has no description`);
      assert.ok(!texts.has(text), `${command.name} --${name}: the same text as another of its options`);
      texts.add(text);
      if (shared.has(name)) continue;
      const other = seen.get(text);
      assert.equal(other, undefined, `${command.name} --${name} has the text of ${other}: "${text}"`);
      seen.set(text, `${command.name} --${name}`);
    }
  }
});

test('-h is --help; a group\'s --help lists that group only', async (t) => {
  const dir = scratch(t);
  const [short, long, group, bare, site] = await Promise.all([
    cli(dir, ['policy', 'create', '-h']), cli(dir, ['policy', 'create', '--help']), cli(dir, ['customer', '--help']),
    cli(dir, ['customer']), cli(dir, ['site', 'api-token', '-h']),
  ]);
  assert.equal(short.code, 0, short.stderr);
  assert.equal(short.stdout, long.stdout);
  assert.ok(short.stdout.startsWith('Usage: latchkey policy create '), short.stdout);
  assert.equal(group.code, 0, group.stderr);
  const listed = (text: string) => [...text.matchAll(/^ {2}([a-z-]+(?: [a-z-]+)*?) (?=--|\[|\s)/gm)].map((m) => m[1]);
  assert.deepEqual(listed(group.stdout), ['customer create', 'customer list', 'customer rotate-key', 'customer password-expiry', 'customer set-password']);
  assert.ok(group.stdout.startsWith('Usage: latchkey customer <command>'), group.stdout);
  // Without --help: the same list, on stderr, exit 2.
  assert.deepEqual({ code: bare.code, stdout: bare.stdout, listed: listed(bare.stderr) }, { code: 2, stdout: '', listed: listed(group.stdout) });
  assert.deepEqual(listed(site.stdout), ['site api-token create', 'site api-token list', 'site api-token revoke', 'site api-token purge-expired']);
  assert.ok(!existsSync(join(dir, 'data')), '--help creates nothing');
});
