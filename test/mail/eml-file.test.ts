/** Without SMTP: the worker writes each mail as a readable .eml file, 0600 in a 0700 directory. */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { simpleParser } from 'mailparser';
import { createMailTransport } from '../../src/mail/transports/choose.ts';
import { createMailWorker } from '../../src/mail/worker.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { inviteParams, mailFixture, newLink } from './fixtures.ts';

describeEachStore('.eml file transport', (kind) => {
  test('a mail becomes one readable .eml file, 0600 in a 0700 outbox directory', async (t) => {
    const f = await mailFixture(t, kind);
    const dataDir = mkdtempSync(join(tmpdir(), 'latchkey-eml-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const dir = join(dataDir, 'outbox');
    const worker = createMailWorker({
      db: f.store.db, dialect: f.store.dialect, sealer: f.sealer, clock: f.clock,
      // No SMTP URL: the .eml transport under the data directory.
      transport: createMailTransport({ dataDir, clock: f.clock }), from: 'no-reply@latchkey.test', workerId: 'eml',
    });
    const link = newLink();
    await f.outbox.enqueue(f.store.db, { customerId: f.customerId, template: 'magic-link-invite', to: 'ada@example.test', params: inviteParams(link) });
    assert.equal(await worker.runOnce(), 1);

    const files = readdirSync(dir);
    assert.equal(files.length, 1, `only the .eml, no temporary file: ${files.join(', ')}`);
    assert.match(files[0]!, /^2026-01-15T12-00-00-000Z-[0-9a-f-]{36}\.eml$/);
    assert.equal(statSync(join(dir, files[0]!)).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const parsed = await simpleParser(readFileSync(join(dir, files[0]!)));
    assert.equal(parsed.subject, 'Sign in to Wiki');
    assert.ok(parsed.text?.includes(link));
    assert.ok(typeof parsed.html === 'string' && parsed.html.includes(link));
    assert.equal(parsed.to && !Array.isArray(parsed.to) ? parsed.to.text : undefined, 'ada@example.test');
  });
});
