/** A webhook receiver on 127.0.0.1 for tests: records every request and answers as told. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface Received { path: string; headers: IncomingHttpHeaders; body: string }

export interface Receiver {
  url: string;
  received: Received[];
  /** Answers the n-th request (0-based) with the returned status (and optional headers). */
  answer: (n: number, request: Received) => { status: number; headers?: Record<string, string>; body?: string };
}

export async function startReceiver(t: TestContext, answer: Receiver['answer'] = () => ({ status: 200 })): Promise<Receiver> {
  const receiver: Receiver = { url: '', received: [], answer };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const reply = receiver.answer(receiver.received.length, request);
      receiver.received.push(request);
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return receiver;
}

/** The three Standard Webhooks headers of a request, as Webhook.verify takes them. */
export const webhookHeaders = (r: Received): Record<string, string> => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});
