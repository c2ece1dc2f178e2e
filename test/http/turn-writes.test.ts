/**
 * Both faces write their responses at the end of each event-loop turn (src/http/turn-writes.ts):
 * what a client sees must not change. Answers keep their order on a connection, a large body
 * arrives whole while others are answered, a client that goes away costs nobody else anything,
 * and closing the server still ends.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../../src/http/app.ts';

const BIG = 'x'.repeat(8 * 1024 * 1024);
let app: FastifyInstance;
let port: number;

before(async () => {
  app = createHttpApp({ logLevel: 'silent' });
  app.get('/echo/:n', async (request) => ({ n: Number((request.params as { n: string }).n) }));
  // Later requests on a connection answer sooner than earlier ones: order must still hold.
  app.get('/slow/:ms', async (request) => {
    const ms = Number((request.params as { ms: string }).ms);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { ms };
  });
  app.get('/big', async (_request, reply) => reply.type('text/plain').send(BIG));
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});

after(async () => {
  await app.close();
});

/** Sends `raw` on a new connection and reads until `done(received)` says the answers are all in. */
function exchange(raw: string, done: (received: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (done(received)) {
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.write(raw);
  });
}

const get = (path: string, last = false) => `GET ${path} HTTP/1.1\r\nHost: test\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
const bodies = (received: string) => [...received.matchAll(/\r\n\r\n(\{[^}]*\})/g)].map((m) => JSON.parse(m[1]));

test('pipelined requests on one connection are answered in the order they were sent', async () => {
  const raw = get('/slow/30') + get('/echo/1') + get('/slow/5') + get('/echo/2', true);
  const received = await exchange(raw, (r) => bodies(r).length === 4);
  assert.deepEqual(bodies(received), [{ ms: 30 }, { n: 1 }, { ms: 5 }, { n: 2 }]);
  assert.equal(received.match(/HTTP\/1\.1 200 OK\r\n/g)?.length, 4);
});

test('many connections answered in the same turns each get their own answer', async () => {
  const answers = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
    const response = await fetch(`http://127.0.0.1:${port}/echo/${i}`);
    return { status: response.status, body: await response.json() };
  }));
  answers.forEach((answer, i) => assert.deepEqual(answer, { status: 200, body: { n: i } }));
});

test('a body larger than the socket buffer arrives whole while other connections are answered', async () => {
  const big = fetch(`http://127.0.0.1:${port}/big`).then((r) => r.text());
  const small = await Promise.all([1, 2, 3].map((n) => fetch(`http://127.0.0.1:${port}/echo/${n}`).then((r) => r.json())));
  assert.deepEqual(small, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  const body = await big;
  assert.equal(body.length, BIG.length);
  assert.equal(body, BIG);
});

test('a client that leaves before its answer is written does not disturb the server', async () => {
  const leaving: Socket[] = Array.from({ length: 10 }, () => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(get('/slow/20') + get('/big'));
    return socket;
  });
  await new Promise((resolve) => setTimeout(resolve, 5));
  for (const socket of leaving) socket.resetAndDestroy();
  await new Promise((resolve) => setTimeout(resolve, 60));
  const response = await fetch(`http://127.0.0.1:${port}/echo/7`);
  assert.deepEqual(await response.json(), { n: 7 });
});

// Draining reaps idle keep-alive sockets; a socket whose answer has ended but not yet left is
// idle to Node. This is the shutdown race: the answer must still arrive before the socket goes.
test('an answer ended just before idle connections are reaped still arrives', async () => {
  const other = createHttpApp({ logLevel: 'silent' });
  other.get('/', (_request, reply) => {
    // Later than the request's own turn: by then Node counts the connection idle.
    setTimeout(() => {
      reply.send({ ok: true });
      other.server.closeIdleConnections();
    }, 5);
  });
  await other.listen({ host: '127.0.0.1', port: 0 });
  try {
    const answers = await Promise.all(Array.from({ length: 5 }, async () => {
      const response = await fetch(`http://127.0.0.1:${(other.server.address() as { port: number }).port}/`);
      return { status: response.status, body: await response.json() };
    }));
    for (const answer of answers) assert.deepEqual(answer, { status: 200, body: { ok: true } });
  } finally {
    await other.close();
  }
});

test('closing the server ends while keep-alive connections are open', async () => {
  const other = createHttpApp({ logLevel: 'silent' });
  other.get('/', async () => ({ ok: true }));
  await other.listen({ host: '127.0.0.1', port: 0 });
  const socket = connect((other.server.address() as { port: number }).port, '127.0.0.1');
  socket.on('error', () => {});
  const answered = new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(String(chunk))));
  socket.write(get('/'));
  assert.match(await answered, /^HTTP\/1\.1 200/);
  await other.close();
  socket.destroy();
});
