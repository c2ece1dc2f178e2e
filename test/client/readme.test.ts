/**
 * The first example of packages/client/README.md runs as written (its import pointed at the package's
 * source) in a child process against a live server, and prints what the README says it does.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { CLIENT_DIR } from '../../scripts/generate-client.ts';
import { serve } from './server.ts';

test('the README example creates and fetches a user through the typed client', async (t) => {
  const readme = readFileSync(join(CLIENT_DIR, 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(example, 'packages/client/README.md has a ts example');
  assert.ok(example.trim().split('\n').length <= 10, 'the example stays within ten lines');

  const dir = mkdtempSync(join(tmpdir(), 'latchkey-readme-'));
  const file = join(dir, 'example.mts');
  const entry = pathToFileURL(join(CLIENT_DIR, 'src', 'index.ts')).href;
  writeFileSync(file, example.replace(`from '@latchkey/client'`, `from '${entry}'`));

  const app = await serve(t, 'sqlite');
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
    env: { ...process.env, LATCHKEY_URL: app.baseUrl, LATCHKEY_CUSTOMER_KEY: app.ck, LATCHKEY_API_KEY: app.customer.apiKey },
    timeout: 60_000,
  });
  assert.equal(stdout, 'ada@example.com\n');
});
