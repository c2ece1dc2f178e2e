/**
 * The worker's batching under a stream of commits: kick() after each commit must not start a claim
 * and a send per mail (under load that doubles the database work of every generate); kicks within
 * the short coalescing delay share one batch, yet a steady stream of kicks never postpones it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { createSmtpTransport } from '../../src/mail/transports/smtp.ts';
import { createMailWorker } from '../../src/mail/worker.ts';
import { startSmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { inviteParams, mailFixture, newLink, type MailFixture } from './fixtures.ts';

const FROM = 'Latchkey <no-reply@latchkey.test>';
/** Requests arriving a few milliseconds apart (pacing the burst, not waiting for any work). */
const pace = () => new Promise((resolve) => setTimeout(resolve, 2));

/** Counts the worker's claims: the only UPDATE of mail_outbox with RETURNING. */
function claimCounter(): { plugin: KyselyPlugin; count(): number } {
  let claims = 0;
  return {
    count: () => claims,
    plugin: {
      transformQuery({ node }: { node: RootOperationNode }) {
        if (node.kind === 'UpdateQueryNode' && node.returning) claims++;
        return node;
      },
      transformResult: async ({ result }) => result,
    },
  };
}

async function setUp(t: { after(fn: () => unknown): void }, f: MailFixture, options: { kickDelayMs: number }) {
  const smtp = await startSmtpSink();
  t.after(() => smtp.stop());
  const transport = createSmtpTransport(smtp.url, { connectionTimeoutMs: 2_000, greetingTimeoutMs: 2_000, socketTimeoutMs: 5_000 });
  t.after(() => transport.close());
  const claims = claimCounter();
  const worker = createMailWorker({
    db: f.store.db.withPlugin(claims.plugin), dialect: f.store.dialect, sealer: f.sealer, clock: f.clock, transport, from: FROM,
    workerId: `batching-${process.pid}`, pollIntervalMs: 60_000, ...options,
  });
  t.after(() => worker.stop());
  const enqueue = (i: number) => f.outbox.enqueue(f.store.db, {
    customerId: f.customerId, template: 'magic-link-invite', to: `user${i}@example.test`, params: inviteParams(newLink()),
  });
  // The first batch of start() (empty outbox) is over before the counting starts.
  worker.start();
  for (const deadline = Date.now() + 10_000; claims.count() === 0;) {
    assert.ok(Date.now() < deadline, 'the first batch did not run');
    await new Promise((resolve) => setImmediate(resolve));
  }
  await worker.runOnce();
  return { smtp, worker, enqueue, claims: () => claims.count() };
}

describeEachStore('mail worker batching', (kind) => {
  test('ten commits a few ms apart, each followed by kick(), are claimed and sent in one batch', async (t) => {
    const f = await mailFixture(t, kind);
    const { smtp, worker, enqueue, claims } = await setUp(t, f, { kickDelayMs: 3_000 });
    const before = claims();
    for (let i = 0; i < 10; i++) {
      await enqueue(i);
      worker.kick();
      await pace();
    }
    await smtp.waitFor(10);
    // stop() waits for the batch in progress: its mails are marked sent by then.
    await worker.stop();
    assert.equal(claims() - before, 1);
    assert.deepEqual(smtp.messages.map((m) => m.envelope.to[0]).sort(), Array.from({ length: 10 }, (_, i) => `user${i}@example.test`).sort());
    const rows = await f.store.db.selectFrom('mail_outbox').select(['status', 'sealed_data', 'claimed_by']).where('customer_id', '=', f.customerId).execute();
    assert.deepEqual(rows, Array.from({ length: 10 }, () => ({ status: 'sent', sealed_data: null, claimed_by: null })));
  });

  test('a steady stream of kicks does not postpone the batch: the first mail leaves within the delay', async (t) => {
    const f = await mailFixture(t, kind);
    const { smtp, worker, enqueue } = await setUp(t, f, { kickDelayMs: 200 });
    // Kicks every few ms for far longer than the delay; a delay restarted by each kick would never end.
    let i = 0;
    for (const deadline = Date.now() + 15_000; smtp.messages.length === 0; i++) {
      assert.ok(Date.now() < deadline, 'no mail left while kicks kept coming');
      await enqueue(i);
      worker.kick();
      await pace();
    }
    await smtp.waitFor(i);
    await worker.stop();
  });
});
