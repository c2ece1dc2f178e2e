/**
 * kill -9 of a server process between two attempts of a delivery: once a node is back on the same
 * database, the delivery is made, with the same webhook-id, verified by Webhook.verify. Both stores.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { SYSTEM } from '../../src/audit/context.ts';
import { freshDatabase, kinds, serverEnv, startServer, until, withComposition } from '../faults/harness.ts';
import { startReceiver, webhookHeaders } from './receiver.ts';

for (const kind of kinds) {
  test(`${kind}: a node SIGKILLed between attempts; the delivery is made once a node is back`, async (t) => {
    const receiver = await startReceiver(t, (n) => ({ status: n === 0 ? 500 : 200 }));
    const { url, dir } = await freshDatabase(t, kind);
    const env = await serverEnv(url, dir, {
      LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true', LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: 'true', LATCHKEY_WEBHOOKS_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1',
    });
    const secret = await withComposition(env, async (app) => {
      const customer = await app.services.customers.create({ email: 'webhook-faults@example.test' });
      const { secret } = await app.services.webhooks.create(customer.customerId, { url: receiver.url, events: ['user.'] }, SYSTEM);
      await app.store.db.transaction().execute((trx) => app.services.audit.record(trx, customer.customerId, { action: 'user.updated', target: { type: 'user', id: '1', name: 'alice' } }, SYSTEM));
      return secret;
    });
    const first = await startServer(t, env);
    await until('the first attempt', 30_000, async () => (receiver.received.length >= 1 ? true : undefined));
    // Between attempts: the first one's answer recorded (a kill before that leaves the row to its 2-minute lease).
    await until('the first attempt recorded', 30_000, () => withComposition(env, async (app) => {
      const row = await app.store.db.selectFrom('webhook_deliveries').select('attempts').executeTakeFirst();
      return Number(row?.attempts) >= 1 ? true : undefined;
    }));
    await first.kill9();
    assert.equal(receiver.received.length, 1, 'nothing delivered while no node runs');
    await first.restart();
    await until('the delivery after the restart', 30_000, async () => (receiver.received.length >= 2 ? true : undefined));
    const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    assert.equal(ids.size, 1, 'the same webhook-id on every attempt');
    for (const request of receiver.received) new Webhook(secret).verify(request.body, webhookHeaders(request));
    const delivered = await withComposition(env, async (app) => (await app.store.db.selectFrom('webhook_deliveries').select(['status', 'attempts']).execute()));
    assert.deepEqual(delivered.map((d) => [d.status, Number(d.attempts)]), [['delivered', 2]]);
  });
}
