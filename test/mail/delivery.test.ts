/**
 * The outbox and its worker against a real SMTP server in this process: delivery with both parts,
 * retries while SMTP is down, a crashed worker's lease, sealed parameters, header injection and a
 * stalled server. Time moves with the test clock; waits are on events.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { claimDueMails, countMails, listMails, RETRY } from '../../src/mail/outbox.ts';
import { createSmtpTransport } from '../../src/mail/transports/smtp.ts';
import { createMailWorker } from '../../src/mail/worker.ts';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { inviteParams, mailFixture, newLink, type MailFixture } from './fixtures.ts';

const FROM = 'Latchkey <no-reply@latchkey.test>';

function workerFor(t: { after(fn: () => unknown): void }, f: MailFixture, url: string, extra: Partial<Parameters<typeof createMailWorker>[0]> = {}) {
  const transport = createSmtpTransport(url, { connectionTimeoutMs: 2_000, greetingTimeoutMs: 2_000, socketTimeoutMs: 5_000 });
  t.after(() => transport.close());
  return createMailWorker({ db: f.store.db, dialect: f.store.dialect, sealer: f.sealer, clock: f.clock, transport, from: FROM, workerId: 'w1', ...extra });
}

async function sink(t: { after(fn: () => unknown): void }): Promise<SmtpSink> {
  const s = await startSmtpSink();
  t.after(() => s.stop());
  return s;
}

describeEachStore('mail outbox and worker', (kind) => {
  test('an enqueued invite arrives once at the user address with text and HTML parts', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    const link = newLink();
    await f.store.db.transaction().execute((trx) => f.outbox.enqueue(trx, {
      customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(link),
    }));
    const worker = workerFor(t, f, smtp.url);
    assert.equal(await worker.runOnce(), 1);
    const [mail] = await smtp.waitFor(1);
    assert.deepEqual(mail!.envelope, { from: 'no-reply@latchkey.test', to: ['ada@example.test'] });
    assert.equal(mail!.parsed.subject, 'Sign in to Wiki');
    assert.deepEqual(mail!.parsed.from?.value, [{ name: 'Latchkey', address: 'no-reply@latchkey.test' }]);
    assert.equal(mail!.parsed.to && !Array.isArray(mail!.parsed.to) ? mail!.parsed.to.text : undefined, 'ada@example.test');
    assert.ok(mail!.parsed.text?.includes(link), 'link in the text part');
    assert.ok(typeof mail!.parsed.html === 'string' && mail!.parsed.html.includes(`href="${link}"`), 'link in the HTML part');
    assert.match(mail!.parsed.messageId ?? '', /^<[0-9a-f-]{36}@latchkey\.test>$/);
    const [row] = await listMails(f.store.db, f.customerId);
    assert.equal(row!.messageId, mail!.parsed.messageId);
    assert.deepEqual(await countMails(f.store.db, f.customerId), { pending: 0, sent: 1, failed: 0 });
    assert.equal(await worker.runOnce(), 0);
    assert.equal(smtp.messages.length, 1);
  });

  test('a mail rolled back with its transaction is never sent', async (t) => {
    const f = await mailFixture(t, kind);
    await assert.rejects(f.store.db.transaction().execute(async (trx) => {
      await f.outbox.enqueue(trx, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(newLink()) });
      throw new Error('rollback');
    }), /rollback/);
    assert.deepEqual(await countMails(f.store.db, f.customerId), { pending: 0, sent: 0, failed: 0 });
  });

  test('SMTP down: attempts fail with backoff, and the mail arrives once when it is back', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    const logs: string[] = [];
    const capture = (fields: object, message: string) => { logs.push(JSON.stringify({ ...fields, message })); };
    const worker = workerFor(t, f, smtp.url, { logger: { info: capture, warn: capture, error: capture } });
    await smtp.stop();
    const link = newLink();
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(link) });

    assert.equal(await worker.runOnce(), 0);
    let [row] = await listMails(f.store.db, f.customerId);
    assert.equal(row!.status, 'pending');
    assert.equal(row!.attempts, 1);
    assert.ok(row!.nextAttemptAt > f.clock.now(), 'retry scheduled in the future');
    assert.ok(row!.lastError && !row!.lastError.includes(link));
    // Not due yet: nothing is claimed.
    assert.equal(await worker.runOnce(), 0);
    assert.equal((await listMails(f.store.db, f.customerId))[0]!.attempts, 1);
    // A second attempt, still down: the wait grows.
    f.clock.advance(RETRY.maxDelayMs * 2);
    assert.equal(await worker.runOnce(), 0);
    [row] = await listMails(f.store.db, f.customerId);
    assert.equal(row!.attempts, 2);

    await smtp.restart();
    f.clock.advance(RETRY.maxDelayMs * 2);
    assert.equal(await worker.runOnce(), 1);
    await smtp.waitFor(1);
    f.clock.advance(RETRY.maxDelayMs * 2);
    assert.equal(await worker.runOnce(), 0);
    assert.equal(smtp.messages.length, 1);
    assert.ok(smtp.messages[0]!.parsed.text?.includes(link));
    assert.deepEqual(await countMails(f.store.db, f.customerId), { pending: 0, sent: 1, failed: 0 });
    assert.equal(logs.filter((line) => line.includes('will retry')).length, 2);
    assert.ok(!logs.join('\n').includes(link.split('/').pop()!), 'the link is never logged');
  });

  test('a worker that claims and crashes: after the lease another worker sends the mail', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(newLink()) });
    const leaseMs = 60_000;
    const claimed = await claimDueMails(f.store.db, f.store.dialect, { workerId: 'crashed', now: f.clock.now(), leaseMs, limit: 10 });
    assert.equal(claimed.length, 1);
    const other = workerFor(t, f, smtp.url, { workerId: 'w2', leaseMs });
    assert.equal(await other.runOnce(), 0, 'held by the lease');
    f.clock.advance(leaseMs + 1);
    assert.equal(await other.runOnce(), 1);
    await smtp.waitFor(1);
    assert.equal(smtp.messages[0]!.parsed.messageId, claimed[0]!.messageId);
    assert.equal(smtp.messages.length, 1);
  });

  test('the link is sealed in the outbox row and dropped once sent', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    const link = newLink();
    const token = link.split('/').pop()!;
    const id = await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(link) });
    const before = await f.store.db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(before.sealed_data, 'sealed data present while pending');
    assert.ok(!JSON.stringify(before).includes(token), 'token not in clear in the row');
    assert.ok(!JSON.stringify(before).includes('magic/'), 'link not in clear in the row');
    await workerFor(t, f, smtp.url).runOnce();
    await smtp.waitFor(1);
    const after = await f.store.db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(after.sealed_data, null);
    assert.equal(after.status, 'sent');
    assert.ok(!JSON.stringify(after).includes(token));
  });

  test('CR/LF in the user or application name cannot add headers or recipients', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    const evil = 'Wiki\r\nBcc: eve@evil.test\r\nX-Injected: yes';
    await f.outbox.enqueue(f.store.db, {
      customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test',
      params: inviteParams(newLink(), 'Ada\r\nCc: eve@evil.test', evil),
    });
    assert.equal(await workerFor(t, f, smtp.url).runOnce(), 1);
    const [mail] = await smtp.waitFor(1);
    assert.deepEqual(mail!.envelope.to, ['ada@example.test']);
    assert.equal(mail!.parsed.headers.has('bcc'), false);
    assert.equal(mail!.parsed.headers.has('cc'), false);
    assert.equal(mail!.parsed.headers.has('x-injected'), false);
    assert.equal(mail!.parsed.subject, 'Sign in to Wiki Bcc: eve@evil.test X-Injected: yes');
    // Recipients are single bare addresses.
    for (const to of ['ada@example.test\r\nBcc: eve@evil.test', 'ada@example.test, eve@evil.test', 'Ada <ada@example.test>', 'ada@example.test\n']) {
      await assert.rejects(f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to, params: inviteParams(newLink()) }), { name: 'Invalid' });
    }
  });

  // The test's own limit stands for "no hang": nodemailer's unbounded defaults would wait 30 s for a greeting.
  test('a stalled SMTP server (accepts, never greets) fails the attempt within its bound and it is retried', { timeout: 15_000 }, async (t) => {
    const f = await mailFixture(t, kind);
    const sockets = new Set<Socket>();
    const stalled = createServer((socket) => { sockets.add(socket); socket.on('error', () => {}); });
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    t.after(() => { for (const s of sockets) s.destroy(); stalled.close(); });
    const port = (stalled.address() as { port: number }).port;
    const transport = createSmtpTransport(`smtp://127.0.0.1:${port}`, { connectionTimeoutMs: 300, greetingTimeoutMs: 300, socketTimeoutMs: 300 });
    t.after(() => transport.close());
    const worker = createMailWorker({ db: f.store.db, dialect: f.store.dialect, sealer: f.sealer, clock: f.clock, transport, from: FROM, workerId: 'w1' });
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(newLink()) });

    assert.equal(await worker.runOnce(), 0);
    const [row] = await listMails(f.store.db, f.customerId);
    assert.equal(row!.status, 'pending');
    assert.equal(row!.attempts, 1);
    assert.match(row!.lastError ?? '', /greeting|timeout/i);
    assert.ok(sockets.size >= 1, 'the server was reached');
    f.clock.advance(RETRY.maxDelayMs * 2);
    assert.equal(await worker.runOnce(), 0);
    assert.equal((await listMails(f.store.db, f.customerId))[0]!.attempts, 2);
  });

  test('a mail still failing 3 days after enqueue is given up and keeps nothing secret', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    await smtp.stop();
    const worker = workerFor(t, f, smtp.url);
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(newLink()) });
    assert.equal(await worker.runOnce(), 0);
    f.clock.advance(RETRY.giveUpAfterMs);
    assert.equal(await worker.runOnce(), 0);
    const row = await f.store.db.selectFrom('mail_outbox').selectAll().where('customer_id', '=', f.customerId).executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.equal(row.sealed_data, null);
    assert.equal(row.attempts, 2);
  });

  test('start() drains the outbox in the background and kick() sends right after a commit', async (t) => {
    const f = await mailFixture(t, kind);
    const smtp = await sink(t);
    const worker = workerFor(t, f, smtp.url, { pollIntervalMs: 60_000 });
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'one@example.test', params: inviteParams(newLink()) });
    worker.start();
    t.after(() => worker.stop());
    await smtp.waitFor(1);
    // The poll interval is a minute: only the kick sends this one now.
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'two@example.test', params: inviteParams(newLink()) });
    worker.kick();
    await smtp.waitFor(2);
    await worker.stop();
    assert.deepEqual(smtp.messages.map((m) => m.envelope.to[0]), ['one@example.test', 'two@example.test']);
  });
});
