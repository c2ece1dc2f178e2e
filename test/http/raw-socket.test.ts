/**
 * What only a real socket shows (issue 13 items 8 and 9): headers over 16 KiB get 431 and
 * Transfer-Encoding with Content-Length gets 400, each a complete response in the face's shape;
 * a 1.5 MB body gets its 413 read in full, and the connection closed without a reset, by a client
 * that writes everything before it reads: in one write, in 64 KiB pieces (the case that failed
 * before the bounded drain: the server closed while the client was still writing, EPIPE), and on
 * a keep-alive connection. And close() waits for no connection that has nothing in flight: one the
 * client opened and sent nothing on (a browser's preconnect), or a keep-alive one idle after its answer.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { buildSite, TOKEN_PATH } from '../site/helpers.ts';

if (postgresUrl) await postgresStore();

interface RawResponse { status: number; headers: Record<string, string>; body: string }

interface Client {
  /** Writes `bytes` (in `chunk`-byte pieces, a turn apart, when given); rejects if the server reset the connection meanwhile. */
  write(bytes: Buffer, chunk?: number): Promise<void>;
  /** Reads one complete response (framed by Content-Length); rejects on a reset or a close before it is whole. */
  read(): Promise<RawResponse>;
  /** Resolves once the server has closed its side; rejects on a reset. */
  closed(): Promise<void>;
  socket: Socket;
}

/**
 * A client as simple as curl's or a scripted one: it reads nothing until it has written all it
 * means to (the socket stays paused), and any reset is a failure, while writing or after.
 */
async function open(port: number): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  socket.pause();
  let buffered = Buffer.alloc(0);
  let ended = false;
  let failure: Error | undefined;
  let wake = () => {};
  socket.on('error', (error) => { failure = error; wake(); });
  socket.on('end', () => { ended = true; wake(); });
  socket.on('data', (chunk: Buffer) => { buffered = Buffer.concat([buffered, chunk]); wake(); });
  const until = async (ready: () => boolean) => {
    socket.resume();
    while (!ready()) {
      if (failure) throw failure;
      if (ended) throw new Error(`closed before a complete response: ${JSON.stringify(buffered.toString('latin1').slice(0, 200))}`);
      await new Promise<void>((resolve) => { wake = resolve; });
    }
  };
  return {
    socket,
    async write(bytes, chunk = bytes.length) {
      for (let at = 0; at < bytes.length; at += chunk) {
        await new Promise<void>((resolve, reject) => socket.write(bytes.subarray(at, at + chunk), (error) => (error ? reject(error) : resolve())));
        if (failure) throw failure;
        if (chunk < bytes.length) await new Promise((resolve) => setImmediate(resolve));
      }
    },
    async read() {
      let split = -1;
      let length = 0;
      await until(() => {
        split = buffered.indexOf('\r\n\r\n');
        if (split < 0) return false;
        const announced = /\r\ncontent-length:\s*(\d+)/i.exec(buffered.subarray(0, split).toString('latin1'));
        if (!announced) throw new Error('response without Content-Length');
        length = Number(announced[1]);
        return buffered.length >= split + 4 + length;
      });
      const [statusLine, ...lines] = buffered.subarray(0, split).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = buffered.subarray(split + 4, split + 4 + length).toString('utf8');
      buffered = buffered.subarray(split + 4 + length);
      return { status: Number(statusLine.split(' ')[1]), headers, body };
    },
    async closed() {
      await until(() => ended).catch((error) => { if (!ended) throw error; });
      if (failure) throw failure;
      socket.end();
    },
  };
}

/** Writes `request` whole, then reads one response and waits for the server to close. */
async function exchange(port: number, request: Buffer): Promise<RawResponse> {
  const client = await open(port);
  await client.write(request);
  const res = await client.read();
  await client.closed();
  return res;
}

async function listen(_t: unknown, app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

const head = (lines: string[]) => Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);

describeEachStore('raw sockets', (kind) => {
  test('headers over 16 KiB: 431; Transfer-Encoding with Content-Length: 400; both faces, their shapes (item 8)', async (t) => {
    const s = await buildSite(t, kind);
    const sitePort = await listen(t, s.site);
    const identityPort = await listen(t, s.identity);
    const big = `X-Big: ${'a'.repeat(17 * 1024)}`;
    const smuggle = ['Transfer-Encoding: chunked', 'Content-Length: 5'];
    const cases: [number, Buffer, number, Record<string, unknown>][] = [
      [sitePort, head(['GET /cms-json/cms/v2/posts HTTP/1.1', 'Host: x', big]), 431,
        { status: 'error', error: 'REQUEST_HEADER_FIELDS_TOO_LARGE', code: '431', error_description: 'request headers are too large' }],
      [identityPort, head(['GET /api/admin/users/stats/count HTTP/1.1', 'Host: x', big]), 431,
        { status: 'ERROR', code: '431', message: 'request headers are too large' }],
      [sitePort, Buffer.concat([head([`POST ${TOKEN_PATH} HTTP/1.1`, 'Host: x', ...smuggle]), Buffer.from('0\r\n\r\n')]), 400,
        { status: 'error', error: 'BAD_REQUEST', code: '400', error_description: 'request is malformed' }],
      [identityPort, Buffer.concat([head(['POST /api/admin/users/create HTTP/1.1', 'Host: x', ...smuggle]), Buffer.from('0\r\n\r\n')]), 400,
        { status: 'ERROR', code: '400', message: 'request is malformed' }],
    ];
    for (const [port, request, status, body] of cases) {
      const res = await exchange(port, request);
      assert.equal(res.status, status, res.body);
      assert.equal(res.headers.connection, 'close');
      assert.match(res.headers['content-type'], /^application\/json/);
      assert.deepEqual(JSON.parse(res.body), body);
    }
  });

  // A client that writes all of a 1.5 MB body before it reads (curl, a script) must read the 413, not
  // a reset: in one write, in 64 KiB pieces a turn apart (still writing when the answer is ready),
  // and on a keep-alive connection that already carried a request.
  for (const mode of ['whole', 'slow', 'keep-alive'] as const) {
    test(`a 1.5 MB body written before reading (${mode}) gets its complete 413 and a clean close, 50 times on each face (item 9)`, async (t) => {
      const s = await buildSite(t, kind);
      const ports = { site: await listen(t, s.site), identity: await listen(t, s.identity) };
      const payload = Buffer.alloc(1_500_000, 'a');
      const signed = () => Object.entries(s.admin.headers()).map(([k, v]) => `${k}: ${v}`);
      const expected = {
        site: { status: 'error', error: 'PAYLOAD_TOO_LARGE', code: '413', error_description: 'request body is too large' },
        identity: { status: 'ERROR', code: '413', message: 'request body is too large' },
      };
      const requestHead = (face: 'site' | 'identity', extra: string[] = []) => face === 'site'
        ? head([`POST ${TOKEN_PATH} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', ...extra, `Content-Length: ${payload.length}`])
        : head(['POST /api/admin/users/create HTTP/1.1', 'Host: x', 'Content-Type: application/json', ...signed(), ...extra, `Content-Length: ${payload.length}`]);
      const warmUp = { site: head(['GET /cms-json/cms/v2/posts HTTP/1.1', 'Host: x']), identity: head(['GET /api/admin/users/stats/count HTTP/1.1', 'Host: x']) };
      for (let i = 0; i < 50; i++) {
        for (const face of ['site', 'identity'] as const) {
          const where = `${face}, ${mode}, round ${i}`;
          const client = await open(ports[face]);
          t.after(() => client.socket.destroy());
          if (mode === 'keep-alive') {
            await client.write(warmUp[face]);
            const first = await client.read();
            assert.equal(first.status, 401, `${where}: ${first.body}`);
            assert.notEqual(first.headers.connection, 'close', where);
          }
          await client.write(requestHead(face, mode === 'keep-alive' ? ['Connection: keep-alive'] : []));
          await client.write(payload, mode === 'slow' ? 64 * 1024 : undefined);
          const res = await client.read();
          assert.equal(res.status, 413, `${where}: ${res.body}`);
          assert.deepEqual(JSON.parse(res.body), expected[face], where);
          assert.equal(res.headers.connection, 'close', where);
          await client.closed();
        }
      }
    });
  }

  test('close() closes a connection that has sent nothing and an idle keep-alive one, on both faces, while their clients keep them open', { timeout: 60_000 }, async (t) => {
    // Registered first, so it runs first: a close() that waits for these must not hold the test's end.
    const clients: Client[] = [];
    t.after(() => { for (const client of clients) client.socket.destroy(); });
    const s = await buildSite(t, kind);
    for (const [face, app, path] of [['site', s.site, '/cms-json/cms/v2/posts'], ['identity', s.identity, '/api/admin/users/stats/count']] as const) {
      const port = await listen(t, app);
      const silent = await open(port);
      const idle = await open(port);
      clients.push(silent, idle);
      await idle.write(head([`GET ${path} HTTP/1.1`, 'Host: x']));
      const answer = await idle.read();
      assert.equal(answer.status, 401, `${face}: ${answer.body}`);
      assert.notEqual(answer.headers.connection, 'close', face);
      // Before, close() waited for as long as the silent client kept its connection open.
      await app.close();
      await silent.closed();
      await idle.closed();
    }
  });
});
