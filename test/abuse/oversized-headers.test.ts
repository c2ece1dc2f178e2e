/**
 * Oversized headers on every face over a real socket: one huge header, thousands of small ones, a
 * huge cookie on the cookie-reading pages (landing code form, console). Each is a 431 in the face's
 * body, the connection closes cleanly, and the next request is served as usual.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { describeEachStore } from '../helpers/stores.ts';
import { setup } from './helpers.ts';

/** Sends the bytes, reads until the server closes; the status and the body after the blank line. */
function exchange(port: number, request: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(text.split(' ')[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    socket.write(request, () => socket.end());
  });
}

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

const SITE_431 = { status: 'error', error: 'REQUEST_HEADER_FIELDS_TOO_LARGE', code: '431', error_description: 'request headers are too large' };
const IDENTITY_431 = { status: 'ERROR', code: '431', message: 'request headers are too large' };

describeEachStore('abuse: oversized headers', (kind) => {
  test('one huge header, thousands of small ones, a huge cookie: 431 in the face body on every face, and service goes on', async (t) => {
    const env = await setup(t, kind);
    const sitePort = await listen(await env.site());
    const identityPort = await listen(env.identity);
    const huge = `X-Big: ${'a'.repeat(20 * 1024)}\r\n`;
    const many = Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const cookie = `Cookie: lk_magic_login=${'A'.repeat(20 * 1024)}\r\n`;
    const request = (line: string, extra: string) => `${line} HTTP/1.1\r\nHost: x\r\n${extra}Connection: close\r\n\r\n`;
    const cases: [number, string, unknown][] = [
      [sitePort, request('GET /cms-json/cms/v2/posts', huge), SITE_431],
      [sitePort, request('POST /cms-json/api/v1/token', many), SITE_431],
      [identityPort, request('POST /api/admin/users/get', huge), IDENTITY_431],
      [identityPort, request('POST /api/admin/users/get', many), IDENTITY_431],
      [identityPort, request('POST /magic/code', cookie), IDENTITY_431],
      [identityPort, request('GET /console/sign-in', cookie.replace('lk_magic_login', 'lk_console')), IDENTITY_431],
      [identityPort, request('POST /oauth/token', many), IDENTITY_431],
    ];
    for (const [port, raw, body] of cases) {
      const res = await exchange(port, raw);
      assert.equal(res.status, 431, `${raw.slice(0, 40)}: ${res.body}`);
      assert.deepEqual(JSON.parse(res.body), body);
    }
    // The service goes on: ordinary requests on new connections are served.
    assert.equal((await exchange(sitePort, request('GET /healthz', ''))).status, 200);
    assert.equal((await exchange(identityPort, request('GET /healthz', ''))).status, 200);
  });
});
