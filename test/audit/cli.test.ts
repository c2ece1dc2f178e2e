/**
 * `latchkey audit list`: in process on both stores (filters, the user by name, bounds), and as a
 * child process on a SQLite file: --json prints the page as one JSON object; --follow --json prints
 * the latest events oldest first, then each new event (one JSON object per line) as another process
 * writes it, until SIGTERM ends it with exit 0.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs, UsageError } from '../../src/cli/args.ts';
import { auditList } from '../../src/cli/commands/audit.ts';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { AuditEvent } from '../../src/audit/types.ts';
import { build, fileTestEnv } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { recordEvents } from './helpers.ts';

describeEachStore('audit list', (kind) => {
  test('lists newest first with the filters; a user by username; bad options are usage errors', async (t) => {
    const env = await build(t, kind);
    const { customerId, customerKey } = env.customer;
    const { users } = env.composition.services;
    // Created as the CLI would: the event names the cli actor.
    await users.create(customerId, { username: 'grace', email: 'grace@example.test', firstName: 'G', lastName: 'H', customAttributes: {} },
      { actor: { type: 'cli', id: 'operator' }, ip: '', requestId: 'r1', correlationId: '' });
    const grace = (await users.findByLogin(customerId, 'grace'))!;
    await recordEvents(env, customerId, 3, 'group.updated', (i) => ({ type: 'group', id: `g${i}`, name: `G${i}` }));
    const run = (...args: string[]) => auditList.run(parseArgs(['audit', 'list', '--customer-key', customerKey, ...args]), { app: env.composition, auditContext: SYSTEM });

    const all = (await run('--json')).json as { events: AuditEvent[]; nextCursor: string };
    assert.deepEqual(all.events.map((e) => e.action), ['group.updated', 'group.updated', 'group.updated', 'user.created']);
    assert.equal(all.nextCursor, '');
    const byUser = await run('--user', 'GRACE@example.test');
    assert.equal(byUser.text, `${new Date(env.clock.now()).toISOString()}\tuser.created\tcli:operator\tuser:${grace.id}:grace\t-`);
    assert.deepEqual(((await run('--action', 'group.', '--limit', '2')).json as { events: AuditEvent[] }).events.map((e) => e.target.name), ['G2', 'G1']);
    assert.equal((await run('--to', String(env.clock.now() - 1))).text, 'No events.');
    await assert.rejects(run('--limit', '501'), UsageError);
    await assert.rejects(run('--limit', 'ten'), UsageError);
    await assert.rejects(run('--user', 'nobody'), UsageError);
  });
});

test('audit list --json and --follow --json through the CLI entry point', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  t.after(() => rmSync(env.LATCHKEY_DATA_DIR, { recursive: true, force: true }));
  const app = await compose(loadConfig(env));
  t.after(() => app.close());
  const customer = await app.services.customers.create({ email: 'owner@example.test' });
  const record = (name: string) => app.store.db.transaction().execute((trx) =>
    app.services.audit.record(trx, customer.customerId, { action: 'group.updated', target: { type: 'group', id: name, name } }, SYSTEM));
  for (const name of ['a', 'b', 'c']) await record(name);
  const args = ['bin/latchkey.js', 'audit', 'list', '--customer-key', customer.customerKey, '--json'];

  const { stdout } = await promisify(execFile)(process.execPath, args, { env, cwd: process.cwd() });
  const page = JSON.parse(stdout) as { events: AuditEvent[]; nextCursor: string };
  assert.deepEqual(page.events.map((e) => e.target.name), ['c', 'b', 'a']);
  assert.equal(stdout.split('\n').length, 2, 'one line');

  const child = spawn(process.execPath, [...args, '--follow', '--limit', '2'], { env, cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value as string) as AuditEvent;
  try {
    // The latest two, oldest first.
    assert.deepEqual([(await next()).target.name, (await next()).target.name], ['b', 'c']);
    // Written by this process while the CLI follows: printed as they come, oldest first, each once.
    for (const name of ['d', 'e']) await record(name);
    assert.deepEqual([(await next()).target.name, (await next()).target.name], ['d', 'e']);
    await record('f');
    assert.equal((await next()).target.name, 'f');
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, stderr);
  const rest: string[] = [];
  for (let line = await lines.next(); !line.done; line = await lines.next()) rest.push(line.value as string);
  assert.deepEqual(rest, [], 'nothing printed twice');
});
