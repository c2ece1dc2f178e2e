/**
 * SMTP refusing or stalling (issue 17 part 3), through the real server process and LATCHKEY_SMTP_URL:
 * magic-link generate still answers 200 (the mail leaves from the outbox after the response), the
 * worker's attempt fails within its bound and is recorded with a backoff (it never hangs on a server
 * that never greets), and once SMTP is back the mail arrives, once.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { createStore } from '../../src/store/db.ts';
import { startSmtpSink } from '../helpers/smtp-sink.ts';
import { admin, freshDatabase, serverEnv, startServer, until, withComposition, type Customer } from './harness.ts';

const RETURN_URL = 'https://app.example.test/back';
/** generate never waits on SMTP: far under the SMTP client's own 5 s timeouts. */
const GENERATE_BOUND_MS = 3_000;

async function scenario(t: TestContext, fault: 'refusing' | 'stalling'): Promise<void> {
  const sink = await startSmtpSink();
  t.after(() => sink.stop());
  await sink.stop();
  // Stalling: a server on SMTP's port that accepts and never says a word.
  const held = new Set<Socket>();
  let connections = 0;
  const stall = createServer((socket) => { connections++; held.add(socket); socket.on('error', () => {}); });
  if (fault === 'stalling') await new Promise<void>((resolve) => stall.listen(sink.port, '127.0.0.1', resolve));
  const closeStall = async () => {
    if (!stall.listening) return;
    const closed = new Promise((resolve) => stall.close(resolve));
    for (const socket of held) socket.destroy();
    await closed;
  };
  t.after(closeStall);

  const { url, dir } = await freshDatabase(t, 'sqlite');
  const env = await serverEnv(url, dir, { LATCHKEY_SMTP_URL: sink.url });
  let customer!: Customer;
  let applicationUuid = '';
  await withComposition(env, async (app) => {
    customer = await app.services.customers.create({ email: 'faults-owner@example.test' });
    await app.services.users.create(customer.customerId, { username: 'invitee', email: 'invitee@example.test', firstName: 'I', lastName: 'V', customAttributes: {} }, SYSTEM);
    const { application } = await app.services.applications.create(customer.customerId, { name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    applicationUuid = application.uuid;
    await app.services.policies.create(customer.customerId, { applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }, SYSTEM);
  });
  const server = await startServer(t, env);
  const store = await createStore(url);
  t.after(() => store.close());
  const outbox = () => store.db.selectFrom('mail_outbox').select(['status', 'attempts', 'last_error', 'next_attempt_at', 'to_address']).execute();

  const started = performance.now();
  const response = await admin(server.identityUrl, customer, '/magiclink/generate', { username: 'invitee', applicationUuid, redirectUri: RETURN_URL });
  const elapsed = performance.now() - started;
  assert.equal(response.status, 200, await response.text());
  assert.ok(elapsed < GENERATE_BOUND_MS, `generate answered after ${Math.round(elapsed)} ms`);

  // The first attempt fails (refused at once; stalled: at the greeting timeout) and is scheduled again.
  const failed = await until(`the ${fault} attempt to be recorded`, 15_000, async () => {
    const rows = await outbox();
    return rows.length === 1 && rows[0]!.attempts >= 1 ? rows[0]! : undefined;
  });
  assert.equal(failed.status, 'pending');
  assert.equal(failed.to_address, 'invitee@example.test');
  assert.ok(failed.last_error && failed.last_error.length > 0);
  assert.ok(failed.next_attempt_at > Date.now() - 1000, 'the retry waits its backoff');
  if (fault === 'stalling') assert.ok(connections >= 1, 'the worker did reach the stalling server');
  t.diagnostic(`${fault}: first attempt failed with "${failed.last_error}"`);

  // SMTP is back on the same port: the retry delivers, once.
  await closeStall();
  const back = performance.now();
  await sink.restart();
  const [mail] = await sink.waitFor(1, 20_000);
  t.diagnostic(`${fault}: delivered ${Math.round(performance.now() - back)} ms after SMTP returned`);
  assert.deepEqual(mail!.envelope.to, ['invitee@example.test']);
  await until('the mail to be marked sent', 10_000, async () => ((await outbox())[0]!.status === 'sent' ? true : undefined));
  assert.equal(sink.messages.length, 1, 'sent once');
  assert.equal(server.child.exitCode, null);
}

test('SMTP refusing and SMTP stalling: generate answers at once, the worker retries with backoff, the mail arrives once', { concurrency: 2 }, async (t) => {
  await Promise.all([
    t.test('refusing (connection refused)', (tt) => scenario(tt, 'refusing')),
    t.test('stalling (accepts, never greets)', (tt) => scenario(tt, 'stalling')),
  ]);
});
