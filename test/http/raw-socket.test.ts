/**
 * What only a real socket shows (issue 13 items 8 and 9): headers over 16 KiB get 431 and
 * Transfer-Encoding with Content-Length gets 400, each a complete response in the face's shape;
 * a 1.5 MB body gets its 413 read in full by a client that writes everything before reading.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { buildSite, TOKEN_PATH } from '../site/helpers.ts';

if (postgresUrl) await postgresStore();

interface RawResponse { status: number; headers: Record<string, string>; body: string }

/** Writes `request` whole, then reads until the server closes; fails on a reset or a cut response. */
function exchange(port: number, request: Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      socket.end();
      const raw = Buffer.concat(chunks).toString('latin1');
      const split = raw.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no complete response head: ${JSON.stringify(raw.slice(0, 200))}`));
      const [statusLine, ...lines] = raw.slice(0, split).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = raw.slice(split + 4);
      if (Number(headers['content-length']) !== Buffer.byteLength(body, 'latin1')) {
        return reject(new Error(`cut body: ${headers['content-length']} announced, ${body.length} read`));
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.write(request);
  });
}

async function listen(t: { after(fn: () => Promise<void>): void }, app: FastifyInstance): Promise<number> {
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

  test('a 1.5 MB body written whole before reading gets its complete 413, 50 times on each face (item 9)', async (t) => {
    const s = await buildSite(t, kind);
    const sitePort = await listen(t, s.site);
    const identityPort = await listen(t, s.identity);
    const payload = Buffer.alloc(1_500_000, 'a');
    const signed = () => Object.entries(s.admin.headers()).map(([k, v]) => `${k}: ${v}`);
    const site413 = { status: 'error', error: 'PAYLOAD_TOO_LARGE', code: '413', error_description: 'request body is too large' };
    const identity413 = { status: 'ERROR', code: '413', message: 'request body is too large' };
    for (let i = 0; i < 50; i++) {
      const toSite = Buffer.concat([head([`POST ${TOKEN_PATH} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', `Content-Length: ${payload.length}`]), payload]);
      const siteRes = await exchange(sitePort, toSite);
      assert.equal(siteRes.status, 413, `site, round ${i}`);
      assert.deepEqual(JSON.parse(siteRes.body), site413);
      assert.equal(siteRes.headers.connection, 'close');

      const toIdentity = Buffer.concat([head(['POST /api/admin/users/create HTTP/1.1', 'Host: x', 'Content-Type: application/json',
        ...signed(), `Content-Length: ${payload.length}`]), payload]);
      const identityRes = await exchange(identityPort, toIdentity);
      assert.equal(identityRes.status, 413, `identity, round ${i}: ${identityRes.body}`);
      assert.deepEqual(JSON.parse(identityRes.body), identity413);
      assert.equal(identityRes.headers.connection, 'close');
    }
  });
});
