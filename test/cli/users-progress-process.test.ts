/**
 * Progress of `latchkey users import|export` run as child processes whose stderr is no terminal (a pipe):
 * lines while the work goes on and a last line at 100 % that counts every row, while stdout holds only the
 * result. Content is asserted, not timing: `--progress-seconds 0` asks for a line after every batch.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { fileTestEnv } from '../helpers/app.ts';

const execFileAsync = promisify(execFile);
const ROWS = 20000;

test('import and export of 20000 rows without a terminal: periodic lines on stderr and a last line at 20000/20000', { timeout: 180_000 }, async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  const dir = env.LATCHKEY_DATA_DIR;
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const app = await compose(loadConfig(env));
  const customer = await app.services.customers.create({ email: 'owner@example.test' });
  await app.close();
  const file = join(dir, 'users.csv');
  const lines = ['username,email,firstName,lastName,groups'];
  for (let i = 1; i <= ROWS; i++) lines.push(`user${i},user${i}@example.test,First${i},Last,team${i % 9}`);
  writeFileSync(file, lines.join('\n') + '\n');
  const cli = (...args: string[]) => execFileAsync(process.execPath, ['bin/latchkey.js', ...args, '--customer-key', customer.customerKey],
    { env, cwd: process.cwd(), maxBuffer: 64 * 1024 * 1024 });

  const imported = await cli('users', 'import', file, '--json', '--progress-seconds', '0');
  assert.deepEqual(JSON.parse(imported.stdout), { created: ROWS, updated: 0, unchanged: 0, failed: 0, errors: [] });
  const importLines = imported.stderr.trimEnd().split('\n');
  // One line after each batch of 500, then the last one.
  assert.equal(importLines.length, ROWS / 500 + 1, imported.stderr);
  assert.match(importLines[0], /^latchkey: users import: 500\/20000 rows \(2 %\)/);
  for (const line of importLines.slice(0, -1)) assert.match(line, /^latchkey: users import: \d+\/20000 rows \(\d+ %\)(, \d+ rows\/s)?(, about .+ left)?$/);
  assert.match(importLines.at(-1)!, /^latchkey: users import: 20000\/20000 rows \(100 %\), in \d+ s(, \d+ rows\/s)?; 20000 created, 0 updated, 0 unchanged, 0 failed$/);

  // The default interval: at least the last line, still at 100 %.
  const again = await cli('users', 'import', file, '--json');
  assert.deepEqual(JSON.parse(again.stdout), { created: 0, updated: 0, unchanged: ROWS, failed: 0, errors: [] });
  assert.match(again.stderr.trimEnd().split('\n').at(-1)!, /^latchkey: users import: 20000\/20000 rows \(100 %\), in .*; 0 created, 0 updated, 20000 unchanged, 0 failed$/);

  const exported = await cli('users', 'export', '--format', 'jsonl', '--progress-seconds', '0');
  assert.equal(exported.stdout.trimEnd().split('\n').length, ROWS, 'stdout holds the users only');
  const exportLines = exported.stderr.trimEnd().split('\n');
  assert.equal(exportLines.length, ROWS / 500 + 1, exported.stderr);
  assert.match(exportLines[0], /^latchkey: users export: 500\/20000 users \(2 %\)/);
  assert.match(exportLines.at(-1)!, /^latchkey: users export: 20000\/20000 users \(100 %\), in \d+ s(, \d+ users\/s)?$/);
});
