/**
 * The audit listener keeps each customer's enabled endpoints in memory (issue 27's write cost):
 * an endpoint created on one node receives the next event recorded on another, within the change
 * feed's bound; and a kept list that trails a delete or a disable writes nothing for that endpoint.
 * Two compositions on one database stand for the two nodes (as in test/read-cache.test.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import type { ChangeFeed } from '../../src/store/changes.ts';
import { createStore } from '../../src/store/db.ts';
import * as repo from '../../src/webhooks/repo.ts';
import { createWebhooksService } from '../../src/webhooks/service.ts';
import { testEnv } from '../helpers/app.ts';
import { describeEachStore, postgresSchema, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

const LOCAL = { LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true', LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: 'true' };
const URL = 'http://127.0.0.1:9/hook';

async function twoNodes(t: TestContext, kind: StoreKind): Promise<{ here: Composition; elsewhere: Composition }> {
  const env = testEnv(LOCAL);
  if (kind === 'sqlite') env.LATCHKEY_DATABASE_URL = join(mkdtempSync(join(tmpdir(), 'latchkey-hooks-')), 'latchkey.sqlite');
  const config = loadConfig(env);
  const clock = createTestClock(Date.now());
  if (kind === 'sqlite') {
    const here = await compose(config, { clock });
    const elsewhere = await compose(config, { clock });
    t.after(async () => { await elsewhere.close(); await here.close(); });
    return { here, elsewhere };
  }
  const shared = await postgresStore();
  const otherStore = await createStore(postgresUrl!, { schema: await postgresSchema(), poolSize: 2 });
  t.after(() => otherStore.close());
  return { here: await compose(config, { clock, store: shared }), elsewhere: await compose(config, { clock, store: otherStore }) };
}

/** One event, committed in its own transaction on `node`, as a service writes it. */
const recordOn = (node: Composition, customerId: number) =>
  node.store.db.transaction().execute((trx) => node.services.audit.record(trx, customerId, { action: 'user.updated', target: { type: 'user', id: '1', name: 'ada' } }, SYSTEM));

/** A feed that never sees a change: the kept list trails every write, as on a node whose notification is late. */
const silentFeed = (): ChangeFeed => ({ mark: () => 0, unchangedSince: () => true });

describeEachStore('kept webhook endpoints', (kind) => {
  test('an endpoint created on one node receives the next event recorded on another', async (t) => {
    const { here, elsewhere } = await twoNodes(t, kind);
    const customer = await here.services.customers.create({ email: `hooks-${randomBytes(4).toString('hex')}@example.test` });
    // The node that records now keeps "no endpoints" for this customer.
    await recordOn(here, customer.customerId);
    await recordOn(here, customer.customerId);

    const { webhook } = await elsewhere.services.webhooks.create(customer.customerId, { url: URL, events: ['user.'] }, SYSTEM);
    const delivered = async () => (await here.services.webhooks.deliveries(customer.customerId, webhook.webhookId)).length;
    if (kind === 'sqlite') {
      // Another process's commit is seen by the next request, which a later turn of the event loop handles.
      await new Promise((resolve) => setImmediate(resolve));
      await recordOn(here, customer.customerId);
      assert.equal(await delivered(), 1);
    } else {
      // Within the feed's bound: the notification normally arrives within a millisecond; 5 s at most here.
      for (let waited = 0; ; waited += 20) {
        await recordOn(here, customer.customerId);
        if (await delivered() > 0) break;
        if (waited > 5000) assert.fail('the new endpoint got nothing after 5 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    const [delivery] = await here.services.webhooks.deliveries(customer.customerId, webhook.webhookId);
    assert.equal(delivery!.status, 'pending');
    assert.equal(delivery!.action, 'user.updated');
  });

  test('a kept list that trails a delete or a disable writes nothing for that endpoint, and the event still commits', async (t) => {
    const { here } = await twoNodes(t, kind);
    const { db } = here.store;
    const { clock } = here;
    const customer = await here.services.customers.create({ email: `hooks-${randomBytes(4).toString('hex')}@example.test` });
    const gone = await here.services.webhooks.create(customer.customerId, { url: URL, events: ['*'] }, SYSTEM);
    const off = await here.services.webhooks.create(customer.customerId, { url: `${URL}/2`, events: ['*'] }, SYSTEM);
    let kicks = 0;
    const stale = createWebhooksService({
      db, clock, sealer: undefined as never, audit: here.services.audit, policy: { allowHttp: true, allowPrivate: true },
      changes: silentFeed(), deliveriesEnqueued: () => { kicks++; },
    });
    const event = await recordOn(here, customer.customerId);
    const enqueue = () => db.transaction().execute((trx) => stale.enqueue(trx, customer.customerId, event));
    await enqueue();
    assert.equal(kicks, 1, 'both endpoints kept and written to');
    const countFor = async (id: number) => Number((await db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('webhook_id', '=', id).executeTakeFirstOrThrow()).n);
    assert.equal(await countFor(off.webhook.id), 3, 'its own webhook.created, the recorded event and the one enqueued here');

    await here.services.webhooks.delete(customer.customerId, gone.webhook.webhookId, SYSTEM);
    await repo.disableWebhook(db, off.webhook.id, clock.now());
    // The delete's own event (webhook.deleted) went to the other endpoint, then enabled.
    const before = await countFor(off.webhook.id);
    await enqueue();
    assert.equal(kicks, 1, 'nothing written, so the worker is not woken');
    assert.equal(await countFor(gone.webhook.id), 0);
    assert.equal(await countFor(off.webhook.id), before);
    const endpoints = await here.services.webhooks.list(customer.customerId);
    assert.deepEqual(endpoints.map((w) => [w.webhookId, w.enabled]), [[off.webhook.webhookId, false]]);
  });
});
