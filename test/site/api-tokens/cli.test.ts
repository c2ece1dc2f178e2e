import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { SYSTEM } from '../../../src/audit/context.ts';
import { parseArgs } from '../../../src/cli/args.ts';
import { apiTokenCreate, apiTokenList, apiTokenPurgeExpired, apiTokenRevoke } from '../../../src/cli/commands/api-token.ts';
import type { Command } from '../../../src/cli/command.ts';
import { compose } from '../../../src/compose/index.ts';
import { loadConfig } from '../../../src/config.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { bearer, buildTokenSite, DAY, ISO, json, SECRET } from './harness.ts';
import { fileTestEnv } from '../../helpers/app.ts';

const run = (command: Command, app: Parameters<Command['run']>[1]['app'], argv: string[]) => command.run(parseArgs(argv), { app: app, auditContext: SYSTEM });

describeEachStore('site api-token commands', (kind) => {
  test('create, list, revoke and purge a user\'s tokens', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS: '90' });
    const app = site.composition;
    await site.createUser('alice');
    const ck = ['--customer-key', site.customer.customerKey];
    const now = site.clock.now();

    const created = (await run(apiTokenCreate, app, ['site', 'api-token', 'create', '--user', 'alice', '--name', 'deploy', '--type', 'bearer', '--expires-days', '2', ...ck, '--json'])).json as Record<string, unknown>;
    assert.match(String(created.token), SECRET);
    assert.deepEqual(created, {
      id: created.id, name: 'deploy', type: 'bearer', username: 'alice', createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 2 * DAY).toISOString(), lastUsedAt: null, expired: false, token: created.token,
    });
    json(await site.get('/rest/api/2/myself', bearer(String(created.token))), 200);
    const basic = (await run(apiTokenCreate, app, ['site', 'api-token', 'create', '--user', 'ALICE', '--name', 'ci', '--type', 'basic', ...ck])).json as { id: number; expiresAt: string };
    assert.equal(basic.expiresAt, new Date(now + 90 * DAY).toISOString());

    const listed = (await run(apiTokenList, app, ['site', 'api-token', 'list', '--user', 'alice', ...ck])).json as { id: number; lastUsedAt: string | null }[];
    assert.deepEqual(listed.map((x) => x.id), [created.id, basic.id]);
    assert.match(String(listed[0].lastUsedAt), ISO);
    assert.ok(!JSON.stringify(listed).includes(String(created.token)));

    assert.deepEqual((await run(apiTokenRevoke, app, ['site', 'api-token', 'revoke', '--id', String(basic.id), ...ck])).json, { id: basic.id, revoked: true });
    await assert.rejects(run(apiTokenRevoke, app, ['site', 'api-token', 'revoke', '--id', String(basic.id), ...ck]), /API token not found/);

    site.clock.advance(3 * DAY);
    assert.deepEqual((await run(apiTokenPurgeExpired, app, ['site', 'api-token', 'purge-expired', '--user', 'alice', ...ck])).json, { deleted: 1 });
    assert.deepEqual((await run(apiTokenList, app, ['site', 'api-token', 'list', '--user', 'alice', ...ck])).json, []);
  });

  test('refusals: unknown user, bad type, lifetime over the maximum, another customer\'s token', async (t) => {
    const site = await buildTokenSite(t, kind, { LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS: '10' });
    const app = site.composition;
    const alice = await site.createUser('alice');
    const ck = ['--customer-key', site.customer.customerKey];
    const create = (...extra: string[]) => run(apiTokenCreate, app, ['site', 'api-token', 'create', '--name', 'n', ...ck, ...extra]);
    await assert.rejects(create('--user', 'nobody', '--type', 'basic'), { code: 'not_found', message: 'Invalid username or email.' });
    await assert.rejects(create('--user', 'alice', '--type', 'digest'), { message: '--type must be basic or bearer' });
    await assert.rejects(create('--user', 'alice', '--type', 'basic', '--expires-days', 'x'), { message: '--expires-days must be a positive whole number' });
    await assert.rejects(create('--user', 'alice', '--type', 'basic', '--expires-days', '11'),
      { code: 'invalid', message: "expiresInDays must be at most 10: the administrator's maximum token lifetime is 10 days" });
    const other = await site.newCustomer();
    const token = await site.token(alice, 'basic');
    await assert.rejects(run(apiTokenRevoke, app, ['site', 'api-token', 'revoke', '--id', String(token.id), '--customer-key', other.customer.customerKey]), /API token not found/);
  });
});

const execFileAsync = promisify(execFile);

test('the CLI as a child process, --json, on a SQLite file', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  const dataDir = env.LATCHKEY_DATA_DIR;
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const app = await compose(loadConfig(env));
  try {
    const customer = await app.services.customers.create({ email: 'owner@example.test' });
    await app.services.users.create(customer.customerId, { username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', customAttributes: {} }, SYSTEM);
  } finally {
    await app.close();
  }
  const cli = async (...args: string[]) => {
    try {
      const { stdout } = await execFileAsync(process.execPath, ['bin/latchkey.js', ...args], { env, cwd: process.cwd() });
      return { code: 0, stdout: JSON.parse(stdout), stderr: '' };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: JSON.parse(failed.stderr) };
    }
  };

  const created = await cli('site', 'api-token', 'create', '--user', 'alice', '--name', 'cli', '--type', 'basic', '--expires-days', '7', '--json');
  assert.equal(created.code, 0);
  assert.match(created.stdout.token, SECRET);
  assert.equal(created.stdout.username, 'alice');
  const listed = await cli('site', 'api-token', 'list', '--user', 'alice', '--json');
  const { token: _secret, ...shown } = created.stdout;
  assert.deepEqual(listed.stdout, [shown]);
  assert.deepEqual((await cli('site', 'api-token', 'revoke', '--id', String(created.stdout.id), '--json')).stdout, { id: created.stdout.id, revoked: true });
  assert.deepEqual((await cli('site', 'api-token', 'purge-expired', '--json')).stdout, { deleted: 0 });
  assert.deepEqual(await cli('site', 'api-token', 'create', '--user', 'alice', '--name', 'x', '--type', 'nope', '--json'),
    { code: 2, stdout: '', stderr: { error: 'usage', message: '--type must be basic or bearer' } });
  assert.deepEqual(await cli('site', 'api-token', 'list', '--user', 'bob', '--json'),
    { code: 1, stdout: '', stderr: { error: 'not_found', message: 'Invalid username or email.' } });
});
