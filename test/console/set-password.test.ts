/**
 * `latchkey customer set-password` run as a user would: the owner can then sign in to the console
 * with it (checked through the console's own sign-in route), a weak password is refused, an unknown
 * customer key is an error, and a new password ends the owner's console sessions.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { compose } from '../../src/compose/index.ts';
import { createConsoleAccounts } from '../../src/compose/identity.ts';
import { loadConfig } from '../../src/config.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { fileTestEnv } from '../helpers/app.ts';
import { ROOT } from '../helpers/paths.ts';

const BIN = join(ROOT, 'bin', 'latchkey.js');

function cli(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { env }, (error, stdout, stderr) => {
      done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('customer set-password sets the console password and ends console sessions', async (t) => {
  const env = fileTestEnv();
  const created = await cli(env, ['customer', 'create', '--email', 'Owner@Example.test', '--json']);
  assert.equal(created.code, 0, created.stderr);
  const { customerKey } = JSON.parse(created.stdout) as { customerKey: number };

  const app = await compose(loadConfig(env as Record<string, string>));
  t.after(() => app.close());
  const { owners, sessions } = createConsoleAccounts({ db: app.store.db, clock: app.clock, sealer: createSealer(app.masterKey) });
  const before = await owners.checkPassword('owner@example.test', 'a console password', '203.0.113.1');
  assert.equal(before.outcome, 'wrong');
  const session = await sessions.create((await app.services.customers.findByKey(String(customerKey)))!.id, 'active');

  const set = await cli(env, ['customer', 'set-password', '--customer-key', String(customerKey), '--password', 'a console password', '--json']);
  assert.equal(set.code, 0, set.stderr);
  assert.deepEqual(JSON.parse(set.stdout), { customerKey, email: 'owner@example.test', passwordSet: true });
  const after = await owners.checkPassword('OWNER@example.test', 'a console password', '203.0.113.1');
  assert.equal(after.outcome, 'signed-in');
  assert.equal(await sessions.resolve(session), undefined, 'the old session ended');

  const weak = await cli(env, ['customer', 'set-password', '--customer-key', String(customerKey), '--password', 'short', '--json']);
  assert.equal(weak.code, 1);
  assert.deepEqual(JSON.parse(weak.stderr), { error: 'invalid', message: 'password must be 8 to 128 characters' });
  const unknown = await cli(env, ['customer', 'set-password', '--customer-key', '123', '--password', 'a console password', '--json']);
  assert.equal(unknown.code, 1);
  assert.deepEqual(JSON.parse(unknown.stderr), { error: 'not_found', message: 'customer not found' });
  const usage = await cli(env, ['customer', 'set-password', '--customer-key', String(customerKey), '--json']);
  assert.equal(usage.code, 2);
});
