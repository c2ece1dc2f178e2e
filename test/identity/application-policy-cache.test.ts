/**
 * Magic-link generate and the landing keep applications and login policies in memory (the read
 * cache). Two compositions on one store (one change feed) stand for two nodes: what an admin changes
 * on node A is what node B acts on at once, never with the removed policy or application. Their clock
 * stands still, so no answer ages out of the cache: only the change feed can make B read again.
 * (Nodes on separate stores, told by PostgreSQL's notifications: test/read-cache.test.ts, for users,
 * API tokens and keys.)
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { simpleParser } from 'mailparser';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { Invalid, NotFound } from '../../src/lib/errors.ts';
import { describeEachStore, openTestStore, type StoreKind } from '../helpers/stores.ts';

const RETURN_URL = 'https://app.example.test/return';

async function twoNodes(t: TestContext, kind: StoreKind): Promise<[Composition, Composition]> {
  const { store, owned } = await openTestStore(kind);
  const env = { LATCHKEY_DATABASE_URL: ':memory:', LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'), LATCHKEY_LOG_LEVEL: 'silent' };
  const clock = createTestClock(Date.now());
  const nodes: Composition[] = [];
  for (let i = 0; i < 2; i++) {
    nodes.push(await compose(loadConfig({ ...env, LATCHKEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'latchkey-cache-')) }), { store, clock }));
  }
  t.after(async () => {
    for (const node of nodes) await node.close();
    if (owned) await store.close();
  });
  return [nodes[0]!, nodes[1]!];
}

describeEachStore('applications and login policies kept in memory', (kind) => {
  test('a policy or application removed on one node is not used by another', async (t) => {
    const [a, b] = await twoNodes(t, kind);
    const customer = await a.services.customers.create({ email: `cache-${randomBytes(4).toString('hex')}@example.test` });
    const id = customer.customerId;
    await a.services.users.create(id, { username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', customAttributes: {} }, SYSTEM);
    const { application } = await a.services.applications.create(id, { name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    const wide = await a.services.policies.create(id, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }, SYSTEM);
    const generate = () => b.services.magicLinks.generate(id, { username: 'alice', applicationUuid: application.uuid, redirectUri: RETURN_URL }, randomUUID(), SYSTEM);

    // Node B reads (and keeps) the application and its policy.
    await generate();
    await generate();

    await a.services.policies.delete(id, wide.id, SYSTEM);
    await assert.rejects(generate, (error) => error instanceof Invalid && error.field === 'policy');

    // A policy for the user's group, created on A, is found by B (matched case-insensitively; a kept empty answer is not reused).
    await a.services.policies.create(id, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE', groupName: 'default' }, SYSTEM);
    await generate();

    await a.services.applications.delete(id, application.uuid, SYSTEM);
    await assert.rejects(generate, (error) => error instanceof NotFound && error.entity === 'application');
  });

  test('the landing refuses a link once its policy is removed on another node', async (t) => {
    const [a, b] = await twoNodes(t, kind);
    const customer = await a.services.customers.create({ email: `cache-${randomBytes(4).toString('hex')}@example.test` });
    const id = customer.customerId;
    await a.services.users.create(id, { username: 'bob', email: 'bob@example.test', firstName: 'B', lastName: 'O', customAttributes: {} }, SYSTEM);
    const { application } = await a.services.applications.create(id, { name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    const policy = await a.services.policies.create(id, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }, SYSTEM);
    await b.services.magicLinks.generate(id, { username: 'bob', applicationUuid: application.uuid, redirectUri: RETURN_URL }, randomUUID(), SYSTEM);
    const token = await linkTokenOf(b);

    assert.notEqual(await b.services.magicLinks.inspect(token), 'dead', 'the fresh link is live on B');
    await a.services.policies.delete(id, policy.id, SYSTEM);
    assert.equal(await b.services.magicLinks.inspect(token), 'dead', 'the link is dead on B once its policy is removed on A');
    assert.equal(await b.services.magicLinks.consume(token, SYSTEM), 'dead');
  });
});

/** The link token of the node's only mail: without SMTP, the worker writes it as an .eml file under the data directory. */
async function linkTokenOf(node: Composition): Promise<string> {
  await node.mailWorker.runOnce();
  const outbox = join(node.config.dataDir, 'outbox');
  const files = readdirSync(outbox).filter((name) => name.endsWith('.eml'));
  assert.equal(files.length, 1);
  const mail = await simpleParser(readFileSync(join(outbox, files[0]!)));
  const token = /\/magic\/([A-Za-z0-9_-]{43})/.exec(mail.text ?? '')?.[1];
  assert.ok(token, 'the mail holds the link');
  return token;
}
