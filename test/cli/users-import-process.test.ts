/**
 * `latchkey users import|export` as child processes on a SQLite file: --json summaries on stdout and
 * only the progress's last line on stderr when it is not a terminal, exit codes 0/1/2, export to stdout read back by import,
 * and an import killed (SIGKILL) mid-file then run again, which ends as one clean run does.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createUserExportService } from '../../src/identity/users/export.ts';
import { hashPassword } from '../../src/lib/passwords.ts';
import { fileTestEnv } from '../helpers/app.ts';

const execFileAsync = promisify(execFile);

async function exportAll(app: Composition, customerId: number) {
  const records = [];
  const exporter = createUserExportService({ db: app.store.db, groups: app.services.groups });
  for await (const record of exporter.exportUsers(customerId, { includePasswordHashes: true })) records.push(record);
  return records;
}

test('users import and export through the CLI entry point', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  const dir = env.LATCHKEY_DATA_DIR;
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let app = await compose(loadConfig(env));
  const first = await app.services.customers.create({ email: 'owner@example.test' });
  const second = await app.services.customers.create({ email: 'other@example.test' });
  await app.close();

  // The progress's last line says how long it took and how fast: not compared.
  const timing = (stderr: string) => stderr.replace(/, in \d+ s(, \d+ (rows|users)\/s)?/g, ', in N s');
  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await execFileAsync(process.execPath, ['bin/latchkey.js', ...args], { env, cwd: process.cwd() });
      return { code: 0, stdout, stderr: timing(stderr) };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: timing(failed.stderr) };
    }
  };
  const key = ['--customer-key', first.customerKey];

  const mixed = join(dir, 'mixed.csv');
  writeFileSync(mixed, 'username,email,firstName,lastName,groups\nann,ann@example.test,Ann,A,staff\nbad,nope,B,B,\n');
  assert.deepStrictEqual(await cli('users', 'import', mixed, ...key, '--json'), {
    code: 1,
    stdout: JSON.stringify({ created: 1, updated: 0, unchanged: 0, failed: 1, errors: [{ line: 3, message: 'email must match pattern "^[^\\s@]+@[^\\s@]+$"' }] }) + '\n',
    stderr: 'latchkey: users import: 2/2 rows (100 %), in N s; 1 created, 0 updated, 0 unchanged, 1 failed\n',
  });
  const good = join(dir, 'good.data');
  writeFileSync(good, '{"username":"ben","email":"ben@example.test","firstName":"Ben","lastName":"B","groups":["staff","ops"]}\n');
  assert.deepStrictEqual(await cli('users', 'import', good, '--format', 'jsonl', ...key, '--json'), {
    code: 0, stdout: JSON.stringify({ created: 1, updated: 0, unchanged: 0, failed: 0, errors: [] }) + '\n',
    stderr: 'latchkey: users import: 1/1 rows (100 %), in N s; 1 created, 0 updated, 0 unchanged, 0 failed\n',
  });
  assert.deepStrictEqual(await cli('users', 'import', good, '--format', 'jsonl', ...key), {
    code: 0, stdout: '0 created, 0 updated, 1 unchanged, 0 failed.\n', stderr: 'latchkey: users import: 1/1 rows (100 %), in N s; 0 created, 0 updated, 1 unchanged, 0 failed\n',
  });

  const usage = async (args: string[], message: string) => {
    const result = await cli(...args, ...key, '--json');
    assert.deepStrictEqual({ ...result, stderr: JSON.parse(result.stderr) }, { code: 2, stdout: '', stderr: { error: 'usage', message } }, args.join(' '));
  };
  await usage(['users', 'import'], 'give one FILE to import');
  await usage(['users', 'import', good], 'say --format csv or --format jsonl (the file name ends neither in .csv nor in .jsonl/.ndjson)');
  await usage(['users', 'import', good, '--format', 'xml'], '--format must be csv or jsonl');
  await usage(['users', 'import', join(dir, 'missing.csv')], `cannot read ${join(dir, 'missing.csv')}`);
  const badHeader = join(dir, 'header.csv');
  writeFileSync(badHeader, 'username,emial\nx,x@example.test\n');
  await usage(['users', 'import', badHeader], `${badHeader}: unknown column "emial" (columns: username, email, firstName, lastName, phone, password, alternateEmail, groups, passwordHash, customAttribute1..customAttribute50)`);
  await usage(['users', 'export', '--format', 'xml'], '--format must be csv or jsonl');

  // Export to stdout, read back by import into the other customer.
  const exported = await cli('users', 'export', ...key, '--include-password-hashes');
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(exported.stderr, 'latchkey: users export: 2/2 users (100 %), in N s\n');
  assert.equal(exported.stdout.split('\n').length, 4, 'header, two users, final line break');
  const copy = join(dir, 'copy.csv');
  writeFileSync(copy, exported.stdout);
  assert.equal((await cli('users', 'import', copy, '--customer-key', second.customerKey, '--json')).stdout,
    JSON.stringify({ created: 2, updated: 0, unchanged: 0, failed: 0, errors: [] }) + '\n');
  const jsonl = await cli('users', 'export', ...key, '--format', 'jsonl');
  assert.deepStrictEqual(jsonl.stdout.trim().split('\n').map((line) => JSON.parse(line).username), ['ann', 'ben']);

  app = await compose(loadConfig(env));
  t.after(() => app.close());
  assert.deepStrictEqual(await exportAll(app, second.customerId), await exportAll(app, first.customerId));
});

test('an import killed mid-file and run again ends as one clean run', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  const dir = env.LATCHKEY_DATA_DIR;
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const app = await compose(loadConfig(env));
  t.after(() => app.close());
  const killed = await app.services.customers.create({ email: 'killed@example.test' });
  const clean = await app.services.customers.create({ email: 'clean@example.test' });
  const hash = await hashPassword('violet-otter-harbour-42');
  const rows = 3000;
  const file = join(dir, 'users.csv');
  const lines = ['username,email,firstName,lastName,groups,passwordHash'];
  for (let i = 1; i <= rows; i++) lines.push(`user${i},user${i}@example.test,First${i},Last,team${i % 9};all,"${hash}"`);
  writeFileSync(file, lines.join('\n') + '\n');
  const args = (customerKey: string) => ['bin/latchkey.js', 'users', 'import', file, '--customer-key', customerKey, '--json'];

  const child = spawn(process.execPath, args(killed.customerKey), { env, cwd: process.cwd(), stdio: 'ignore' });
  const exited = once(child, 'exit');
  // Killed once a batch or more is in, well before the end.
  const deadline = Date.now() + 60_000;
  let count = 0;
  while ((count = await app.services.users.count(killed.customerId)) === 0) {
    assert.ok(Date.now() < deadline, 'the import wrote nothing within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill('SIGKILL');
  const [, signal] = await exited;
  assert.equal(signal, 'SIGKILL');
  count = await app.services.users.count(killed.customerId);
  assert.ok(count > 0 && count < rows, `killed mid-file (${count} of ${rows} in)`);
  assert.equal(count % 500, 0, 'whole batches only');

  const again = await execFileAsync(process.execPath, args(killed.customerKey), { env, cwd: process.cwd() });
  assert.deepStrictEqual(JSON.parse(again.stdout), { created: rows - count, updated: 0, unchanged: count, failed: 0, errors: [] });
  await execFileAsync(process.execPath, args(clean.customerKey), { env, cwd: process.cwd() });
  const state = await exportAll(app, killed.customerId);
  assert.equal(state.length, rows);
  assert.deepStrictEqual(state, await exportAll(app, clean.customerId));
});
