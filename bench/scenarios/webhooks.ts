/**
 * Webhook deliveries a second: one endpoint subscribed to every event, a receiver in the bench process
 * (plain HTTP on loopback, answering 204), and a batch of events recorded at once through the services;
 * the server under test's delivery worker claims them from the outbox, signs each (Standard Webhooks)
 * and posts it. The rate is taken between the first and the last arrival, as the mail outbox's is.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { userTarget } from '../../src/audit/targets.ts';
import type { Scenario } from '../harness.ts';

const EVENTS = 2_000;
const SIGNED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

export const webhookDelivery: Scenario = {
  name: 'webhook-delivery',
  summary: `${EVENTS.toLocaleString('en-US')} audit events recorded at once, each delivered signed by the server's webhook worker to a local receiver`,
  async run(bench) {
    const arrivals: number[] = [];
    let unsigned = 0;
    const receiver = createServer((request: IncomingMessage, response) => {
      if (SIGNED.some((name) => typeof request.headers[name] !== 'string')) unsigned++;
      request.resume();
      request.on('end', () => { arrivals.push(Date.now()); response.writeHead(204).end(); });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = receiver.address() as { port: number };
      const { audit, webhooks } = bench.composition.services;
      const customerId = bench.customer.customerId;
      await webhooks.create(customerId, { url: `http://127.0.0.1:${port}/hook`, events: ['user.'] });
      const recorded = Date.now();
      // One transaction: the worker finds the whole batch at once.
      await bench.composition.store.db.transaction().execute(async (trx) => {
        for (let i = 0; i < EVENTS; i++) {
          await audit.record(trx, customerId, { action: 'user.updated', target: userTarget({ id: i + 1, username: `bench-hook-${i}` }), actor: { type: 'system', id: '' } });
        }
      });
      const committed = Date.now();
      for (const deadline = committed + 600_000; arrivals.length < EVENTS;) {
        if (Date.now() > deadline) throw new Error(`webhook-delivery: ${arrivals.length} of ${EVENTS} deliveries arrived within 600 s`);
        await sleep(100);
      }
      if (unsigned > 0) throw new Error(`webhook-delivery: ${unsigned} deliveries arrived without the Standard Webhooks headers`);
      const seconds = (arrivals.at(-1)! - arrivals[0]!) / 1000;
      bench.check('webhook deliveries → local receiver', (EVENTS - 1) / seconds, 'deliveries/s', { op: '>=', threshold: 200, source: 'issue 29 (as the mail outbox)' },
        `${EVENTS} deliveries, first to last arrival ${seconds.toFixed(1)} s; from commit ${((arrivals.at(-1)! - committed) / 1000).toFixed(1)} s; recording ${((committed - recorded) / 1000).toFixed(1)} s`);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  },
};
