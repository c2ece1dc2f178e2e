/**
 * `latchkey users revoke-sessions`: in process on both stores (the user's SSO sessions end, another
 * user's stay; an unknown user or customer is refused), and as a child process on a SQLite file with
 * --json (stdout one JSON line, exit 0; errors as JSON on stderr, exit 1; a missing option, exit 2).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs, UsageError } from '../../src/cli/args.ts';
import { usersRevokeSessions } from '../../src/cli/commands/users-revoke-sessions.ts';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { NotFound } from '../../src/lib/errors.ts';
import { build, fileTestEnv } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const browser = { userAgent: 'Mozilla/5.0 (test)', address: '203.0.113.7' };
const REVOKED = "The user's sessions have been revoked.";

describeEachStore('users revoke-sessions', (kind) => {
  test("ends the user's sessions, by username or e-mail; refuses an unknown user or customer", async (t) => {
    const env = await build(t, kind);
    const { users, ssoSessions } = env.composition.services;
    const { customerId, customerKey } = env.customer;
    for (const username of ['grace', 'alan']) {
      await users.create(customerId, { username, email: `${username}@example.test`, firstName: 'F', lastName: 'L', customAttributes: {} }, SYSTEM);
    }
    const grace = (await users.findByLogin(customerId, 'grace'))!;
    const alan = (await users.findByLogin(customerId, 'alan'))!;
    const g1 = await ssoSessions.open(customerId, grace.id, ['pwd'], browser);
    const g2 = await ssoSessions.open(customerId, grace.id, ['email'], browser);
    const a1 = await ssoSessions.open(customerId, alan.id, ['pwd'], browser);
    const run = (...args: string[]) => usersRevokeSessions.run(parseArgs(['users', 'revoke-sessions', ...args]), { app: env.composition, auditContext: SYSTEM });

    const result = await run('--customer-key', customerKey, '--username', 'GRACE@example.test', '--json');
    assert.deepStrictEqual(result.json, { username: 'grace', status: 'SUCCESS', message: REVOKED });
    assert.equal(result.text, 'Sessions of grace revoked: each of their browsers signs in again.');
    assert.equal(await ssoSessions.current(customerId, g1.value), undefined);
    assert.equal(await ssoSessions.current(customerId, g2.value), undefined);
    assert.ok(await ssoSessions.current(customerId, a1.value), "alan's session stays");

    await assert.rejects(run('--customer-key', customerKey, '--username', 'nobody'), (error: unknown) => error instanceof NotFound && error.message === 'Invalid username or email.');
    await assert.rejects(run('--customer-key', '999999999999', '--username', 'alan'), NotFound);
    await assert.rejects(run('--customer-key', customerKey), (error: unknown) => error instanceof UsageError && error.message === '--username is required');
    assert.ok(await ssoSessions.current(customerId, a1.value), 'refusals end nothing');
  });
});

test('users revoke-sessions --json through the CLI entry point', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  t.after(() => rmSync(env.LATCHKEY_DATA_DIR, { recursive: true, force: true }));
  let app = await compose(loadConfig(env));
  const customer = await app.services.customers.create({ email: 'owner@example.test' });
  await app.services.users.create(customer.customerId, { username: 'grace', email: 'grace@example.test', firstName: 'G', lastName: 'H', customAttributes: {} }, SYSTEM);
  const grace = (await app.services.users.findByLogin(customer.customerId, 'grace'))!;
  const open = await app.services.ssoSessions.open(customer.customerId, grace.id, ['pwd'], browser);
  await app.close();

  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['bin/latchkey.js', ...args], { env, cwd: process.cwd() });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };
  const key = ['--customer-key', customer.customerKey];
  assert.deepStrictEqual(await cli('users', 'revoke-sessions', ...key, '--username', 'grace', '--json'),
    { code: 0, stdout: `${JSON.stringify({ username: 'grace', status: 'SUCCESS', message: REVOKED })}\n`, stderr: '' });
  assert.deepStrictEqual(await cli('users', 'revoke-sessions', ...key, '--username', 'nobody', '--json'),
    { code: 1, stdout: '', stderr: `${JSON.stringify({ error: 'not_found', message: 'Invalid username or email.' })}\n` });
  assert.deepStrictEqual(await cli('users', 'revoke-sessions', ...key, '--json'),
    { code: 2, stdout: '', stderr: `${JSON.stringify({ error: 'usage', message: '--username is required' })}\n` });
  const help = await cli('users', 'revoke-sessions', '--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: latchkey users revoke-sessions --customer-key K --username U \[--json\]\n/);
  assert.match(help.stdout, /\n {2}--username +the user's username or e-mail\n/);

  app = await compose(loadConfig(env));
  t.after(() => app.close());
  assert.equal(await app.services.ssoSessions.current(customer.customerId, open.value), undefined, 'the session ended');
});
