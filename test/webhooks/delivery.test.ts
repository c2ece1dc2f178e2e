/**
 * Webhook delivery end to end on both stores: endpoints created through the admin API, events
 * recorded through the audit log, delivered by the worker to a receiver on 127.0.0.1 that verifies
 * every request with standardwebhooks' Webhook.verify. The clock moves instead of the test sleeping.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { build, testEnv, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { recordEvents } from '../audit/helpers.ts';
import { startReceiver, webhookHeaders } from './receiver.ts';

const LOCAL = { LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true', LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: 'true', LATCHKEY_WEBHOOKS_RETRY_SCHEDULE: '1,1,1' };

async function createWebhook(env: TestApp, url: string, events: string[] = ['user.'], admin = env.admin, customerKey = env.customer.customerKey): Promise<{ webhookId: string; secret: string }> {
  const response = await admin.post('/admin/webhooks/create', { customerKey: Number(customerKey), url, events });
  assert.equal(response.statusCode, 200, response.body);
  const json = response.json();
  assert.equal(json.status, 'SUCCESS');
  assert.match(json.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
  return json;
}

/** Runs the worker until a batch sends nothing more that is due now. */
async function drain(env: TestApp): Promise<void> {
  while (await env.composition.webhookWorker.runOnce() > 0) { /* more may be due */ }
}

describeEachStore('webhook delivery', (kind) => {
  it('delivers each matching event signed (Webhook.verify passes); 500 three times then 200: four attempts, one webhook-id, fresh timestamps', async (t) => {
    const env = await build(t, kind, LOCAL);
    const receiver = await startReceiver(t, (n) => ({ status: n < 3 ? 500 : 200, body: n < 3 ? 'busy' : 'ok' }));
    const { secret, webhookId } = await createWebhook(env, receiver.url, ['user.']);
    const [event] = await recordEvents(env, env.customer.customerId, 1, 'user.updated');
    await recordEvents(env, env.customer.customerId, 1, 'group.updated');

    for (let attempt = 0; attempt < 4; attempt++) {
      await env.composition.webhookWorker.runOnce();
      env.clock.advance(1_000);
    }
    await drain(env);
    assert.equal(receiver.received.length, 4, 'four attempts, the group event not sent');
    const verifier = new Webhook(secret);
    for (const request of receiver.received) {
      const payload = verifier.verify(request.body, webhookHeaders(request)) as { type: string; timestamp: string; data: Record<string, unknown> };
      assert.equal(payload.type, 'user.updated');
      assert.deepEqual(payload.data, JSON.parse(JSON.stringify(event)));
      assert.equal(payload.timestamp, new Date(event!.time).toISOString());
      assert.equal(request.headers['content-type'], 'application/json');
    }
    const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    assert.equal(ids.size, 1);
    assert.match([...ids][0] as string, /^msg_[0-9a-f]{32}$/);
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-timestamp'])).size, 4, 'a fresh timestamp on each attempt');

    const [delivery] = await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId);
    assert.equal(delivery!.status, 'delivered');
    assert.equal(delivery!.attempts, 4);
    assert.equal(delivery!.lastStatus, 200);
    assert.equal(delivery!.lastAnswer, 'ok');
    // Delivered: nothing more goes out.
    env.clock.advance(60_000);
    await drain(env);
    assert.equal(receiver.received.length, 4);
  });

  it('gives up after the schedule: 1 + 3 retries, then failed with the last answer kept (bounded to 1 KB)', async (t) => {
    const env = await build(t, kind, LOCAL);
    const receiver = await startReceiver(t, () => ({ status: 503, body: 'x'.repeat(5000) }));
    const { webhookId } = await createWebhook(env, receiver.url);
    await recordEvents(env, env.customer.customerId, 1);
    for (let i = 0; i < 6; i++) { await drain(env); env.clock.advance(1_000); }
    assert.equal(receiver.received.length, 4);
    const [delivery] = await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId);
    assert.equal(delivery!.status, 'failed');
    assert.equal(delivery!.lastStatus, 503);
    assert.equal(delivery!.lastAnswer!.length, 1024);
  });

  it('a 410 disables the endpoint: no more deliveries to it', async (t) => {
    const env = await build(t, kind, LOCAL);
    const receiver = await startReceiver(t, () => ({ status: 410 }));
    const { webhookId } = await createWebhook(env, receiver.url);
    await recordEvents(env, env.customer.customerId, 2);
    await drain(env);
    assert.equal(receiver.received.length, 1, 'the second waiting delivery stops with the endpoint');
    const list = (await env.admin.post('/admin/webhooks/getall', { customerKey: Number(env.customer.customerKey) })).json();
    assert.deepEqual(list.webhooks.map((w: { webhookId: string; enabled: boolean }) => [w.webhookId, w.enabled]), [[webhookId, false]]);
    await recordEvents(env, env.customer.customerId, 1);
    env.clock.advance(60_000);
    await drain(env);
    assert.equal(receiver.received.length, 1);
    const statuses = (await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId)).map((d) => d.status);
    assert.deepEqual(statuses, ['disabled', 'disabled']);
  });

  it('a redirect is not followed: the 3xx is a failed attempt', async (t) => {
    const env = await build(t, kind, LOCAL);
    const receiver = await startReceiver(t, (n) => (n === 0 ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 }));
    const { webhookId } = await createWebhook(env, receiver.url);
    await recordEvents(env, env.customer.customerId, 1);
    await drain(env);
    assert.deepEqual(receiver.received.map((r) => r.path), ['/hooks']);
    const [delivery] = await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId);
    assert.equal(delivery!.status, 'pending');
    assert.equal(delivery!.lastStatus, 302);
    assert.equal(delivery!.lastError, 'redirect not followed');
    env.clock.advance(1_000);
    await drain(env);
    assert.deepEqual(receiver.received.map((r) => r.path), ['/hooks', '/hooks'], 'retried at the same URL');
  });

  it('tenancy: one customer\'s events never reach another\'s endpoint, nor its listing', async (t) => {
    const env = await build(t, kind, LOCAL);
    const mine = await startReceiver(t);
    const theirs = await startReceiver(t);
    await createWebhook(env, mine.url);
    const other = await env.newCustomer();
    const { webhookId: otherId } = await createWebhook(env, theirs.url, ['user.'], other.admin, other.customer.customerKey);
    await recordEvents(env, env.customer.customerId, 3);
    await drain(env);
    assert.equal(mine.received.length, 3);
    assert.equal(theirs.received.length, 0);
    const list = (await env.admin.post('/admin/webhooks/getall', { customerKey: Number(env.customer.customerKey) })).json();
    assert.equal(list.webhooks.length, 1);
    assert.notEqual(list.webhooks[0].webhookId, otherId);
    assert.equal(JSON.stringify(list).includes('whsec_'), false, 'no secret in the listing');
    const deleted = await env.admin.post('/admin/webhooks/delete', { customerKey: Number(env.customer.customerKey), webhookId: otherId });
    assert.equal(deleted.statusCode, 404);
    assert.equal(deleted.json().status, 'ERROR');
  });

  it('two nodes on one database deliver each event once', async (t) => {
    const env = await build(t, kind, LOCAL);
    const second = await compose(loadConfig(testEnv({ ...LOCAL, LATCHKEY_MASTER_KEY: env.composition.masterKey.toString('hex') })), { clock: env.clock, store: env.composition.store });
    t.after(() => second.close());
    const receiver = await startReceiver(t);
    await createWebhook(env, receiver.url);
    await recordEvents(env, env.customer.customerId, 30);
    for (let i = 0; i < 5; i++) await Promise.all([env.composition.webhookWorker.runOnce(), second.webhookWorker.runOnce()]);
    const ids = receiver.received.map((r) => r.headers['webhook-id']);
    assert.equal(ids.length, 30);
    assert.equal(new Set(ids).size, 30);
  });

  it('a manual resend sends the same message (same webhook-id) again, signed afresh', async (t) => {
    const env = await build(t, kind, LOCAL);
    const receiver = await startReceiver(t);
    const { webhookId, secret } = await createWebhook(env, receiver.url);
    await recordEvents(env, env.customer.customerId, 1);
    await drain(env);
    const [first] = await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId);
    env.clock.advance(2_000);
    await env.composition.services.webhooks.resend(env.customer.customerId, first!.id);
    await drain(env);
    assert.equal(receiver.received.length, 2);
    assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
    assert.notEqual(receiver.received[1]!.headers['webhook-timestamp'], receiver.received[0]!.headers['webhook-timestamp']);
    for (const r of receiver.received) new Webhook(secret).verify(r.body, webhookHeaders(r));
    const other = await env.newCustomer();
    await assert.rejects(env.composition.services.webhooks.resend(other.customer.customerId, first!.id), { code: 'not_found' });
  });
});

describe('webhook targets', () => {
  it('refuses http:// without LATCHKEY_WEBHOOKS_ALLOW_HTTP, and loopback or private literals and localhost without ALLOW_PRIVATE, at create', async (t) => {
    const env = await build(t, 'sqlite', { LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'false' });
    const key = Number(env.customer.customerKey);
    const refused = async (url: string, events: unknown = ['*']) => {
      const response = await env.admin.post('/admin/webhooks/create', { customerKey: key, url, events });
      assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
      assert.equal(response.json().status, 'ERROR');
    };
    await refused('http://hooks.example.com/x');
    for (const host of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '[::1]', '[::ffff:127.0.0.1]', '0.0.0.0', '100.64.0.1', '[fe80::1]', '[fd00::1]', 'localhost']) {
      await refused(`https://${host}/x`);
    }
    await refused('https://user:pw@hooks.example.com/x');
    await refused('https://hooks.example.com/x', []);
    await refused('https://hooks.example.com/x', ['User.Created']);
    const list = (await env.admin.post('/admin/webhooks/getall', { customerKey: key })).json();
    assert.deepEqual(list.webhooks, [], 'nothing was created');
    const ok = await env.admin.post('/admin/webhooks/create', { customerKey: key, url: 'https://93.184.215.14/x', events: ['user.'] });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it('at delivery, a name resolving to a loopback address is refused after resolution: the receiver gets nothing', async (t) => {
    // Created while private targets were allowed; this node (same database) does not allow them.
    const env = await build(t, 'sqlite', LOCAL);
    const receiver = await startReceiver(t);
    const { webhookId } = await createWebhook(env, receiver.url.replace('127.0.0.1', 'localhost'));
    const strict = await compose(loadConfig(testEnv({ LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true', LATCHKEY_MASTER_KEY: env.composition.masterKey.toString('hex') })), { clock: env.clock, store: env.composition.store });
    t.after(() => strict.close());
    await recordEvents(env, env.customer.customerId, 1);
    await strict.webhookWorker.runOnce();
    assert.equal(receiver.received.length, 0);
    const [delivery] = await env.composition.services.webhooks.deliveries(env.customer.customerId, webhookId);
    assert.equal(delivery!.status, 'pending');
    assert.equal(delivery!.lastStatus, null);
    assert.match(delivery!.lastError ?? '', /localhost resolves to a non-public address/);
  });
});
