/**
 * Several nodes drain one outbox: two workers, each with its own database connection and SMTP
 * transport, claim concurrently over 50 mails; every mail reaches the SMTP server exactly once.
 * PostgreSQL: two stores on one schema (SKIP LOCKED). SQLite: two stores on one file (write lock).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createTestClock } from '../../src/lib/clock.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { countMails, createOutbox } from '../../src/mail/outbox.ts';
import { createSmtpTransport } from '../../src/mail/transports/smtp.ts';
import { createMailWorker, type MailWorker } from '../../src/mail/worker.ts';
import { createStore, type Store } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { startSmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore, postgresSchema, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { insertCustomer, inviteParams, newLink } from './fixtures.ts';

const MAILS = 50;

async function twoStores(kind: 'sqlite' | 'postgres', t: { after(fn: () => unknown): void }): Promise<[Store, Store]> {
  if (kind === 'postgres') {
    const first = await postgresStore();
    const second = await createStore(postgresUrl!, { schema: await postgresSchema(), poolSize: 5 });
    t.after(() => second.close());
    return [first, second];
  }
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-mail-'));
  const first = await createStore(join(dir, 'db.sqlite'));
  await migrate(first);
  const second = await createStore(join(dir, 'db.sqlite'));
  t.after(async () => { await first.close(); await second.close(); rmSync(dir, { recursive: true, force: true }); });
  return [first, second];
}

describeEachStore('two mail workers on one database', (kind) => {
  test(`${MAILS} mails, two workers claiming concurrently: each mail is received exactly once`, async (t) => {
    const [storeA, storeB] = await twoStores(kind, t);
    const customerId = await insertCustomer(storeA.db);
    // The PostgreSQL schema is shared by this process's tests: leave no mail for another test's worker.
    if (kind === 'postgres') t.after(() => storeA.db.deleteFrom('customers').where('id', '=', customerId).execute());
    const clock = createTestClock();
    const sealer = createSealer(randomBytes(32));
    const outbox = createOutbox({ sealer, clock, messageIdDomain: 'latchkey.test' });
    await storeA.db.transaction().execute(async (trx) => {
      for (let i = 0; i < MAILS; i++) {
        await outbox.enqueue(trx, { customerId, template: 'magic-link-invite', to: `user${i}@example.test`, params: inviteParams(newLink()) });
      }
    });

    const sink = await startSmtpSink();
    t.after(() => sink.stop());
    const workers: MailWorker[] = [storeA, storeB].map((store, i) => {
      const transport = createSmtpTransport(sink.url);
      t.after(() => transport.close());
      return createMailWorker({ db: store.db, dialect: store.dialect, sealer, clock, transport, from: 'no-reply@latchkey.test', workerId: `node-${i}`, batchSize: 7 });
    });

    const sentBy = [0, 0];
    await Promise.all(workers.map(async (worker, i) => {
      // Each drains until a batch finds nothing; both run at once.
      for (let sent = await worker.runOnce(); sent > 0; sent = await worker.runOnce()) sentBy[i]! += sent;
    }));
    await sink.waitFor(MAILS);
    assert.equal(sentBy[0]! + sentBy[1]!, MAILS);
    const ids = sink.messages.map((m) => m.parsed.messageId);
    assert.equal(new Set(ids).size, MAILS, 'no Message-ID twice');
    assert.deepEqual(sink.messages.map((m) => m.envelope.to[0]).sort(), Array.from({ length: MAILS }, (_, i) => `user${i}@example.test`).sort());
    assert.deepEqual(await countMails(storeB.db, customerId), { pending: 0, sent: MAILS, failed: 0 });
    // Nothing more arrives later.
    assert.equal(await workers[0]!.runOnce() + await workers[1]!.runOnce(), 0);
    assert.equal(sink.messages.length, MAILS);
  });
});
