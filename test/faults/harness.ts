/**
 * What the fault tests share: a real server process (`node dist/main.js`, built when stale) on a
 * SQLite file or a fresh PostgreSQL database, a TCP proxy the test can make refuse or swallow
 * connections, signed admin requests, and bounded polling. Every process and server a test starts
 * is stopped in its t.after.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { signRequest } from '../../src/identity/admin-auth.ts';
import { freePort } from '../helpers/ports.ts';
import { ROOT } from '../helpers/paths.ts';

export const postgresUrl = process.env.LATCHKEY_TEST_POSTGRES_URL || undefined;
export type Kind = 'sqlite' | 'postgres';
/** The stores a suite runs on: PostgreSQL only with LATCHKEY_TEST_POSTGRES_URL (required in CI). */
export const kinds: Kind[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite'];
if (!postgresUrl && process.env.CI === 'true') throw new Error('CI must run the fault tests on PostgreSQL: LATCHKEY_TEST_POSTGRES_URL is not set');

export const PASSWORD = 'violet-otter-harbour-42';
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every 50 ms until it returns a value; throws after `deadlineMs`. */
export async function until<T>(what: string, deadlineMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

let built = false;
export function buildOnce(): void {
  if (built) return;
  const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  built = true;
}

/**
 * Runs `cleanup` after the test, in reverse order of registration (node:test runs t.after hooks in
 * order): a server started after its data directory is stopped before the directory is removed, so
 * its last writes cannot race the removal.
 */
const cleanups = new WeakMap<TestContext, (() => unknown)[]>();
function afterTest(t: TestContext, cleanup: () => unknown): void {
  let stack = cleanups.get(t);
  if (!stack) {
    const created: (() => unknown)[] = [];
    cleanups.set(t, created);
    t.after(async () => { while (created.length > 0) await created.pop()!(); });
    stack = created;
  }
  stack.push(cleanup);
}

/** A database of its own: a SQLite file in a temporary directory, or a fresh PostgreSQL database (dropped after). */
export async function freshDatabase(t: TestContext, kind: Kind): Promise<{ url: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-faults-'));
  afterTest(t, () => rmSync(dir, { recursive: true, force: true }));
  if (kind === 'sqlite') return { url: join(dir, 'latchkey.sqlite'), dir };
  const name = `lk_faults_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  try { await admin.query(`create database ${name}`); } finally { await admin.end(); }
  afterTest(t, async () => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try { await client.query(`drop database if exists ${name} with (force)`); } finally { await client.end(); }
  });
  const url = new URL(postgresUrl!);
  url.pathname = `/${name}`;
  return { url: url.toString(), dir };
}

/** The in-process composition on the same database and master key as the server (setup and checks). */
export async function withComposition<T>(env: Record<string, string>, run: (app: Composition) => Promise<T>): Promise<T> {
  const app = await compose(loadConfig({ ...env, LATCHKEY_LOG_LEVEL: 'silent', LATCHKEY_DATA_DIR: join(env.LATCHKEY_DATA_DIR!, 'setup') }));
  try { return await run(app); } finally { await app.close(); }
}

export interface ServerProcess {
  identityUrl: string;
  siteUrl: string;
  managementUrl: string;
  env: Record<string, string>;
  child: ChildProcess;
  stderr: string[];
  /** The JSON log lines (stdout) so far, parsed. */
  logLines(): Record<string, unknown>[];
  /** SIGKILL, resolved once the process is gone. */
  kill9(): Promise<void>;
  /** A new process on the same data, ports and settings. */
  restart(): Promise<ServerProcess>;
}

/** The environment of a server on `databaseUrl`; ports are chosen now and kept over restarts. */
export async function serverEnv(databaseUrl: string, dir: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const identityPort = await freePort();
  const sitePort = await freePort();
  return {
    LATCHKEY_HOST: '127.0.0.1',
    LATCHKEY_IDENTITY_PORT: String(identityPort),
    LATCHKEY_SITE_PORT: String(sitePort),
    LATCHKEY_MANAGEMENT_PORT: String(await freePort()),
    LATCHKEY_PUBLIC_URL: `http://127.0.0.1:${identityPort}`,
    LATCHKEY_SITE_URL: `http://127.0.0.1:${sitePort}`,
    LATCHKEY_DATA_DIR: join(dir, 'data'),
    LATCHKEY_DATABASE_URL: databaseUrl,
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** Starts `node dist/main.js` with `env` and waits until both faces answer /healthz. */
export async function startServer(t: TestContext, env: Record<string, string>): Promise<ServerProcess> {
  buildOnce();
  const stderr: string[] = [];
  const stdout: string[] = [];
  const child = spawn(process.execPath, ['dist/main.js'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, ...env } });
  child.stderr!.on('data', (chunk: Buffer) => { stderr.push(chunk.toString()); });
  child.stdout!.on('data', (chunk: Buffer) => { stdout.push(chunk.toString()); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  afterTest(t, async () => {
    if (process.env.LATCHKEY_TEST_FAULT_LOGS) process.stderr.write(`--- server ${child.pid}\n${stderr.join('')}\n${stdout.join('')}\n`);
    if (gone()) return;
    child.kill('SIGKILL');
    await exited;
  });
  const identityUrl = `http://127.0.0.1:${env.LATCHKEY_IDENTITY_PORT}`;
  const siteUrl = `http://127.0.0.1:${env.LATCHKEY_SITE_PORT}`;
  await until(`the server to listen (${stderr.join('')})`, 30_000, async () => {
    if (gone()) throw new Error(`the server exited: ${stderr.join('')}`);
    const [a, b] = await Promise.all([fetch(`${identityUrl}/healthz`), fetch(`${siteUrl}/healthz`)]);
    return a.ok && b.ok ? true : undefined;
  }).catch((error: Error) => { throw new Error(`${error.message}\n${stderr.join('')}`); });
  return {
    identityUrl,
    siteUrl,
    managementUrl: `http://127.0.0.1:${env.LATCHKEY_MANAGEMENT_PORT}`,
    env,
    child,
    stderr,
    logLines: () => {
      const text = stdout.join('');
      // Whole lines only: the last chunk may end inside one.
      return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    async kill9() {
      if (!gone()) child.kill('SIGKILL');
      await exited;
    },
    restart: () => startServer(t, env),
  };
}

export interface Customer { customerId: number; customerKey: string; apiKey: string }

/** A signed admin POST (fresh timestamp); never waits more than `timeoutMs`. */
export function admin(base: string, customer: Customer, path: string, body: Record<string, unknown>, timeoutMs = 10_000): Promise<Response> {
  const timestamp = String(Date.now());
  return fetch(`${base}/api/admin${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'customer-key': customer.customerKey,
      timestamp,
      authorization: signRequest(customer.customerKey, timestamp, customer.apiKey),
    },
    body: JSON.stringify({ customerKey: customer.customerKey, ...body }),
    signal: AbortSignal.timeout(timeoutMs),
  });
}

/** A site JWT from the token endpoint. */
export async function siteJwt(siteUrl: string, username: string, password = PASSWORD): Promise<string> {
  const response = await fetch(`${siteUrl}/cms-json/api/v1/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }), signal: AbortSignal.timeout(10_000),
  });
  const body = await response.json() as { jwt_token?: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  return body.jwt_token!;
}

/**
 * A TCP proxy to `target` that the test can break: `refuse()` closes the listening socket (new
 * connections are refused) and cuts every open one; `blackhole()` cuts every open one and accepts new
 * connections without ever forwarding a byte (a peer that never answers); `forward()` heals it.
 */
export interface TcpProxy {
  readonly port: number;
  /** `target`'s URL with the proxy's host and port. */
  via(url: string): string;
  refuse(): Promise<void>;
  blackhole(): Promise<void>;
  /**
   * A network gone silent: open connections stay open but no byte passes either way any more (a
   * query written now is never answered), and new ones are accepted and swallowed. forward() heals it.
   */
  stall(): Promise<void>;
  forward(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(t: TestContext, target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let mode: 'forward' | 'blackhole' | 'stall' = 'forward';
  let server: Server | undefined;
  let port = 0;
  const track = (socket: Socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)); socket.on('error', () => {}); };
  const listen = async () => {
    server = createServer((client) => {
      track(client);
      if (mode !== 'forward') return;
      const upstream = connect(target.port, target.host);
      track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      const pair: [Socket, Socket] = [client, upstream];
      pairs.add(pair);
      const cut = () => { pairs.delete(pair); client.destroy(); upstream.destroy(); };
      client.once('close', cut);
      upstream.once('close', cut);
    });
    await new Promise<void>((resolve, reject) => { server!.once('error', reject); server!.listen(port, '127.0.0.1', () => resolve()); });
    port = (server.address() as { port: number }).port;
  };
  const stopListening = async () => {
    const s = server;
    server = undefined;
    if (s) await new Promise((resolve) => s.close(resolve));
  };
  const cutAll = () => { for (const socket of sockets) socket.destroy(); };
  await listen();
  const proxy: TcpProxy = {
    get port() { return port; },
    via(url) { const u = new URL(url); u.hostname = '127.0.0.1'; u.port = String(port); return u.toString(); },
    async refuse() { const closing = stopListening(); cutAll(); await closing; },
    async blackhole() { mode = 'blackhole'; cutAll(); if (!server) await listen(); },
    async stall() {
      mode = 'stall';
      for (const [client, upstream] of pairs) { client.unpipe(upstream); upstream.unpipe(client); client.pause(); upstream.pause(); }
      if (!server) await listen();
    },
    async forward() { mode = 'forward'; cutAll(); if (!server) await listen(); },
    async close() { const closing = stopListening(); cutAll(); await closing; },
  };
  afterTest(t, () => proxy.close());
  return proxy;
}

/**
 * A fresh PostgreSQL database that the server reaches through a TCP proxy the test can break: `env`
 * routes the server through the proxy, `url` goes straight to the database (for setting up).
 */
export async function postgresBehindProxy(t: TestContext, extra: Record<string, string> = {}): Promise<{ url: string; dir: string; proxy: TcpProxy; env: Record<string, string> }> {
  const { url, dir } = await freshDatabase(t, 'postgres');
  const target = new URL(url);
  const proxy = await startTcpProxy(t, { host: target.hostname, port: Number(target.port || 5432) });
  return { url, dir, proxy, env: await serverEnv(proxy.via(url), dir, extra) };
}
