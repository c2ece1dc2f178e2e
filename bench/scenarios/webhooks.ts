/**
 * Issue 29's webhook figure: how fast the server's webhook worker delivers. One enabled endpoint on a
 * plain node:http receiver in the bench process (answers 204, checks every request's Standard Webhooks
 * headers and signature, counts arrivals); N audit events written at once, one delivery each; the rate
 * between the first and the last arrival, as the outbox scenario measures mails.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as Verifier } from 'standardwebhooks';
import { SYSTEM } from '../../src/audit/context.ts';
import type { Bench, Scenario } from '../harness.ts';
import { headersOf } from '../load.ts';
import { benchUsername } from '../seed.ts';

const DELIVERIES = 2_000;
const EVENT = 'user.updated';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One signed admin call on the server under test (its policy allows the receiver's http://127.0.0.1 URL). */
async function adminCall(bench: Bench, path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const spec = bench.admin(path, body);
  const answer = await fetch(`http://127.0.0.1:${bench.server.ports.identity}${path}`, { method: 'POST', headers: headersOf(spec), body: JSON.stringify(body) });
  const text = await answer.text();
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

interface Receiver {
  url: string;
  /** Requests with the three headers and a signature that verifies with the endpoint's secret. */
  received: number;
  /** Requests without them, or whose signature did not verify (each answered 400, so retried). */
  refused: string[];
  messageIds: Set<string>;
  firstAt?: number;
  lastAt?: number;
  /** Set once the endpoint exists (the secret is its answer). */
  secret?: string;
  close(): Promise<void>;
}

/** The local endpoint: 204 for a delivery whose headers and signature check out, 400 otherwise. */
async function startReceiver(): Promise<Receiver> {
  let verifier: Verifier | undefined;
  const receiver: Receiver = {
    url: '', received: 0, refused: [], messageIds: new Set(),
    async close() { server.closeAllConnections(); server.close(); await once(server, 'close'); },
  };
  const check = (request: IncomingMessage, body: string): string | undefined => {
    const headers = { 'webhook-id': request.headers['webhook-id'], 'webhook-timestamp': request.headers['webhook-timestamp'], 'webhook-signature': request.headers['webhook-signature'] };
    const missing = Object.entries(headers).filter(([, value]) => typeof value !== 'string' || value === '').map(([name]) => name);
    if (missing.length) return `missing ${missing.join(', ')}`;
    verifier ??= receiver.secret ? new Verifier(receiver.secret) : undefined;
    if (!verifier) return 'no secret yet';
    try {
      verifier.verify(body, headers as Record<string, string>);
    } catch (error) {
      return `signature: ${(error as Error).message}`;
    }
    const type = (JSON.parse(body) as { type?: string }).type;
    return type === EVENT ? undefined : `type ${type}`;
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const problem = check(request, Buffer.concat(chunks).toString('utf8'));
      if (problem) {
        receiver.refused.push(problem);
        response.writeHead(400).end();
        return;
      }
      const now = Date.now();
      receiver.firstAt ??= now;
      receiver.lastAt = now;
      receiver.received++;
      receiver.messageIds.add(String(request.headers['webhook-id']));
      response.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/latchkey-events`;
  return receiver;
}

/** Waits until the receiver holds `count` deliveries; throws after `seconds`. */
async function arrivals(receiver: Receiver, count: number, seconds: number): Promise<void> {
  for (const deadline = Date.now() + seconds * 1000; receiver.received < count;) {
    if (receiver.refused.length > 0) throw new Error(`webhook-delivery: the receiver refused ${receiver.refused.length} request(s): ${receiver.refused.slice(0, 3).join('; ')}`);
    if (Date.now() > deadline) throw new Error(`webhook-delivery: ${receiver.received} of ${count} deliveries arrived within ${seconds} s`);
    await sleep(50);
  }
}

export const webhookDelivery: Scenario = {
  name: 'webhook-delivery',
  summary: `${DELIVERIES.toLocaleString('en-US')} audit events written at once to one endpoint (a local receiver answering 204), delivered by the server's webhook worker`,
  async run(bench) {
    const { customerId, customerKey } = bench.customer;
    const { db } = bench.composition.store;
    const { audit } = bench.composition.services;
    const receiver = await startReceiver();
    let webhookId: string | undefined;
    try {
      // Through the server's admin API: its policy (the bench's env) allows the http://127.0.0.1 receiver.
      const created = await adminCall(bench, '/api/admin/webhooks/create', { customerKey, url: receiver.url, events: [EVENT] });
      webhookId = String(created.webhookId);
      receiver.secret = String(created.secret);
      const users = (await db.selectFrom('users').select(['id', 'username']).where('customer_id', '=', customerId).orderBy('id').limit(DELIVERIES).execute())
        .map((u) => ({ type: 'user', id: String(u.id), name: u.username }));
      const target = (i: number) => users[i % users.length] ?? { type: 'user', id: '0', name: benchUsername(1) };

      // One first, by itself: the figure means nothing unless a delivery arrives signed with the endpoint's secret.
      const probeStarted = Date.now();
      await db.transaction().execute((trx) => audit.record(trx, customerId, { action: EVENT, target: target(0) }, SYSTEM));
      await arrivals(receiver, 1, 30);
      bench.note(`one endpoint (${receiver.url}); the first delivery arrived ${((receiver.firstAt! - probeStarted) / 1000).toFixed(2)} s after its event (the worker polls once a second), headers and signature checked`);

      const before = receiver.received;
      receiver.firstAt = undefined;
      const writeStarted = Date.now();
      // One transaction: the worker sees every delivery at once; each event writes its delivery in it.
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < DELIVERIES; i++) await audit.record(trx, customerId, { action: EVENT, target: target(i) }, SYSTEM);
      });
      const committedAt = Date.now();
      await arrivals(receiver, before + DELIVERIES, 600);
      const drainSeconds = (receiver.lastAt! - receiver.firstAt!) / 1000;
      const rate = (DELIVERIES - 1) / drainSeconds;
      if (receiver.messageIds.size !== before + DELIVERIES) throw new Error(`webhook-delivery: ${receiver.messageIds.size} distinct webhook-id values for ${before + DELIVERIES} deliveries`);

      const statusCounts = async () => Object.fromEntries((await db.selectFrom('webhook_deliveries').innerJoin('webhooks', 'webhooks.id', 'webhook_deliveries.webhook_id')
        .select(['webhook_deliveries.status', (eb) => eb.fn.countAll<number>().as('n')])
        .where('webhooks.webhook_id', '=', webhookId!).groupBy('webhook_deliveries.status').execute()).map((r) => [r.status, Number(r.n)]));
      // The last arrival's outcome is written just after its answer.
      let statuses = await statusCounts();
      for (const deadline = Date.now() + 5_000; (statuses.delivered ?? 0) < before + DELIVERIES && Date.now() < deadline; statuses = await statusCounts()) await sleep(100);
      bench.check('webhooks → local receiver', rate, 'deliveries/s', { op: '>=', threshold: 200, source: 'issue 29' },
        `${DELIVERIES} deliveries, first to last arrival ${drainSeconds.toFixed(1)} s; from commit ${((receiver.lastAt! - committedAt) / 1000).toFixed(1)} s; write ${((committedAt - writeStarted) / 1000).toFixed(1)} s`);
      bench.note(`every delivery had webhook-id, webhook-timestamp and a webhook-signature that verifies; rows by status: ${JSON.stringify(statuses)}`);
    } finally {
      // Later scenarios' events must not be delivered to a receiver that is gone.
      if (webhookId) await adminCall(bench, '/api/admin/webhooks/delete', { customerKey, webhookId });
      await receiver.close();
    }
  },
};
