/**
 * The server and the CLI as users run them: child processes, real sockets, a temporary data
 * directory. First start, the CLI against a running server, exit codes, graceful shutdown, the API
 * key at rest, the management interface, the site's customer binding, and a node started without
 * the master key of the node that created the database.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { emptyPostgresSchemaUrl, postgresUrl } from './helpers/stores.ts';
import { freePort } from './helpers/ports.ts';
import { ROOT } from './helpers/paths.ts';

// A safety net against a hung child, not an assertion about speed.
const LIMIT_MS = 120_000;

/** The environment of a child: ours without any LATCHKEY_* setting, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LATCHKEY_')));
  return { ...base, ...env };
}

interface Deployment {
  dataDir: string;
  env: Record<string, string>;
  identityUrl: string;
  siteUrl: string;
  managementUrl: string;
}

async function newDeployment(t: TestContext): Promise<Deployment> {
  const dataDir = mkdtempSync(join(tmpdir(), 'latchkey-server-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const identityPort = await freePort();
  const sitePort = await freePort();
  const managementPort = await freePort();
  return {
    dataDir,
    env: {
      LATCHKEY_DATA_DIR: dataDir,
      LATCHKEY_HOST: '127.0.0.1',
      LATCHKEY_IDENTITY_PORT: String(identityPort),
      LATCHKEY_SITE_PORT: String(sitePort),
      // LATCHKEY_MANAGEMENT_HOST is left unset: the default (loopback) is under test.
      LATCHKEY_MANAGEMENT_PORT: String(managementPort),
      LATCHKEY_LOG_LEVEL: 'debug',
    },
    identityUrl: `http://127.0.0.1:${identityPort}`,
    siteUrl: `http://127.0.0.1:${sitePort}`,
    managementUrl: `http://127.0.0.1:${managementPort}`,
  };
}

interface RunningServer {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout matches `pattern`. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  /** Resolves when stdout has `count` lines matching `pattern`. */
  waitForLines(pattern: RegExp, count: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * package.json's start script, run as npm runs it (without npm in between, so signals reach the
 * server), on a bundle of its own built once for this file: dist/main.js is shared with whoever else
 * builds or runs at the same time.
 */
const BUNDLE = `dist/server-test-${process.pid}.js`;
const START_SCRIPT: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start.replace('dist/main.js', BUNDLE);
// exec: dash forks for `sh -c <command>`, and a signal to the shell would not reach the server.
const START_COMMAND = /^exec\s/.test(START_SCRIPT) ? START_SCRIPT : `exec ${START_SCRIPT}`;
const built = spawnSync(process.execPath, ['scripts/build.mjs', 'src/main.ts', BUNDLE], { cwd: ROOT, encoding: 'utf8' });
assert.equal(built.status, 0, built.stderr);
after(() => rmSync(join(ROOT, BUNDLE), { force: true }));

/** Starts the server as `npm start` does and resolves once both faces listen. */
async function startServer(t: TestContext, deployment: Deployment): Promise<RunningServer> {
  const child = spawn('sh', ['-c', START_COMMAND], {
    cwd: ROOT, env: childEnv(deployment.env), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: { test: (out: string) => RegExpMatchArray | null; resolve: (m: RegExpMatchArray) => void }[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.on('exit', (code, signal) => done({ code, signal }));
  });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const w of [...waiters]) {
      const m = w.test(out);
      if (m) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { err += chunk; });
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });

  const waitUntil = (what: string, test: (out: string) => RegExpMatchArray | null) => new Promise<RegExpMatchArray>((resolveMatch, reject) => {
    const m = test(out);
    if (m) return resolveMatch(m);
    waiters.push({ test, resolve: resolveMatch });
    void exited.then(({ code }) => reject(new Error(`server exited (${code}) before printing ${what}\nstdout:\n${out}\nstderr:\n${err}`)));
  });
  const waitFor = (pattern: RegExp) => waitUntil(String(pattern), (text) => text.match(pattern));
  const waitForLines = async (pattern: RegExp, count: number) => {
    await waitUntil(`${count} × ${pattern}`, (text) => (text.split('\n').filter((line) => pattern.test(line)).length >= count ? [] as unknown as RegExpMatchArray : null));
  };
  const escape = (url: string) => url.replace(/[.:/]/g, '\\$&');
  await waitFor(new RegExp(`Server listening at ${escape(deployment.identityUrl)}`));
  await waitFor(new RegExp(`Server listening at ${escape(deployment.siteUrl)}`));
  await waitFor(new RegExp(`Server listening at ${escape(deployment.managementUrl)}`));
  return { child, stdout: () => out, stderr: () => err, waitFor, waitForLines, exited };
}

async function stopServer(server: RunningServer): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  server.child.kill('SIGTERM');
  return server.exited;
}

/** Runs the CLI (`node bin/latchkey.js …`) to completion. */
function runCli(deployment: Deployment, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, ['bin/latchkey.js', ...args], { cwd: ROOT, env: childEnv(deployment.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/** The signature as the spec defines it, computed here independently of the server's code. */
function signedHeaders(customerKey: string | number, apiKey: string): Record<string, string> {
  const timestamp = String(Date.now());
  return {
    'Content-Type': 'application/json',
    'Customer-Key': String(customerKey),
    Timestamp: timestamp,
    Authorization: createHash('sha512').update(`${customerKey}${timestamp}${apiKey}`).digest('hex'),
  };
}

function readBanner(stdout: string): { customerKey: string; apiKey: string } {
  const customerKey = /Customer key: +(\d+)/.exec(stdout)?.[1];
  const apiKey = /API key: +(\S+)/.exec(stdout)?.[1];
  assert.ok(customerKey && apiKey, `no first-run banner in:\n${stdout}`);
  return { customerKey, apiKey };
}

async function countUsers(deployment: Deployment, customerKey: string | number, apiKey: string): Promise<Response> {
  return fetch(`${deployment.identityUrl}/api/admin/users/stats/count`, { headers: signedHeaders(customerKey, apiKey) });
}

test('first start prints the customer key and API key once; both faces answer; a restart keeps them', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const first = await startServer(t, deployment);
  const { customerKey, apiKey } = readBanner(first.stdout());
  assert.match(apiKey, /^lkak_[0-9A-Za-z]{40,}$/);
  assert.equal(first.stdout().split(apiKey).length - 1, 1, 'the API key is printed exactly once');

  // The way into the console: its address and the owner's one-time link, printed with the keys.
  assert.match(first.stdout(), new RegExp(`\\nConsole: ${deployment.identityUrl.replace(/[.:/]/g, '\\$&')}/console\\n`));
  assert.match(first.stdout(), /\n {2}http:\/\/127\.0\.0\.1:\d+\/console\/first-sign-in\/[A-Za-z0-9_-]{43}\n/);

  // GET / is a page for a browser, linking the console, the API docs and the health endpoints.
  const home = await fetch(`${deployment.identityUrl}/`);
  assert.equal(home.status, 200);
  assert.equal(home.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(String(home.headers.get('content-security-policy')), /default-src 'none'.*frame-ancestors 'none'/);
  assert.equal(home.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(home.headers.get('x-frame-options'), 'DENY');
  const links = [...(await home.text()).matchAll(/<a href="([^"]+)">([^<]+)<\/a>/g)].map(([, href, name]) => [href, name]);
  assert.deepEqual(links, [['/console', 'Console'], ['/api/docs', 'API documentation'], ['/healthz', 'Health'], ['/readyz', 'readiness']]);
  for (const [href] of links) assert.equal((await fetch(`${deployment.identityUrl}${href}`)).status, 200, href);

  for (const url of [`${deployment.identityUrl}/healthz`, `${deployment.siteUrl}/healthz`, `${deployment.identityUrl}/readyz`]) {
    const response = await fetch(url);
    assert.equal(response.status, 200, url);
    assert.deepEqual(await response.json(), { status: 'ok' }, url);
  }
  const counted = await countUsers(deployment, customerKey, apiKey);
  assert.equal(counted.status, 200);
  assert.deepEqual(await counted.json(), { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: 0 } });
  assert.match(String(counted.headers.get('x-request-id')), /^[0-9a-f-]{36}$/);

  assert.deepEqual(await stopServer(first), { code: 0, signal: null });

  const second = await startServer(t, deployment);
  assert.doesNotMatch(second.stdout(), /API key|first-sign-in|Console:/);
  assert.ok(!second.stdout().includes(apiKey));
  const again = await countUsers(deployment, customerKey, apiKey);
  assert.equal(again.status, 200, 'the same keys work after a restart (same database, same master key)');
  assert.deepEqual(await stopServer(second), { code: 0, signal: null });
});

test('the CLI creates a customer whose keys sign requests the running server accepts; exit codes', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const server = await startServer(t, deployment);
  const email = 'cli-owner@example.test';

  const created = await runCli(deployment, ['customer', 'create', '--email', email, '--json']);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^\{"customerId":\d+,"customerKey":\d+,"apiKey":"lkak_[0-9A-Za-z]+"\}\n$/);
  const keys = JSON.parse(created.stdout) as { customerId: number; customerKey: number; apiKey: string };
  assert.deepEqual(Object.keys(keys), ['customerId', 'customerKey', 'apiKey']);
  assert.equal(typeof keys.customerKey, 'number');
  assert.ok(Number.isSafeInteger(keys.customerKey));

  const response = await fetch(`${deployment.identityUrl}/api/admin/users/create`, {
    method: 'POST',
    headers: signedHeaders(keys.customerKey, keys.apiKey),
    body: JSON.stringify({ customerKey: keys.customerKey, username: 'cli.user', email: 'cli.user@example.test', firstName: 'C', lastName: 'L' }),
  });
  assert.equal(response.status, 200);
  const body = await response.json() as Record<string, unknown>;
  assert.equal(typeof body.userId, 'number');
  assert.deepEqual({ ...body, userId: 0 }, { userId: 0, username: 'cli.user', email: 'cli.user@example.test', status: 'SUCCESS', message: 'User created successfully.' });
  // The same request through the hosted service's path.
  assert.equal((await countUsers(deployment, keys.customerKey, keys.apiKey)).status, 200);

  // Usage errors: exit 2, nothing on stdout, a JSON error on stderr under --json.
  const usage: [string[], string][] = [
    [['customer', 'create', '--json'], '--email is required'],
    [['customer', 'frobnicate', '--json'], 'unknown command: customer frobnicate'],
    [['--json'], 'no command given'],
    [['customer', 'password-expiry', '--customer-key', String(keys.customerKey), '--days', 'soon', '--json'], '--days must be a number of days or "off"'],
    [['customer', 'rotate-key', '--customer-key', 'abc', '--json'], '--customer-key must be the numeric customer key'],
  ];
  for (const [args, message] of usage) {
    const run = await runCli(deployment, args);
    assert.equal(run.code, 2, args.join(' '));
    assert.equal(run.stdout, '', args.join(' '));
    assert.deepEqual(JSON.parse(run.stderr), { error: 'usage', message }, args.join(' '));
  }
  const plain = await runCli(deployment, ['customer', 'create']);
  assert.equal(plain.code, 2);
  assert.equal(plain.stderr, 'latchkey: --email is required\nusage: latchkey customer create --email E [--password P] [--name N] [--json]\n');

  // Refusals: exit 1 with the domain error.
  const refusals: [string[], { error: string; message: string }][] = [
    [['customer', 'create', '--email', email, '--json'], { error: 'conflict', message: 'a customer with this email already exists' }],
    [['customer', 'create', '--email', 'not-an-email', '--json'], { error: 'invalid', message: 'email must be an e-mail address' }],
    [['customer', 'rotate-key', '--customer-key', '123', '--json'], { error: 'not_found', message: 'customer not found' }],
  ];
  for (const [args, expected] of refusals) {
    const run = await runCli(deployment, args);
    assert.equal(run.code, 1, args.join(' '));
    assert.equal(run.stdout, '', args.join(' '));
    assert.deepEqual(JSON.parse(run.stderr), expected, args.join(' '));
  }

  // The API key at rest: sealed in the database, in no file of the data directory in plain text.
  const { customerKey: firstKey, apiKey: firstApiKey } = readBanner(server.stdout());
  assert.deepEqual(await stopServer(server), { code: 0, signal: null });
  const files = readdirSync(deployment.dataDir).filter((f) => statSync(join(deployment.dataDir, f)).isFile());
  assert.ok(files.includes('latchkey.sqlite'), files.join(', '));
  for (const file of files) {
    const bytes = readFileSync(join(deployment.dataDir, file));
    for (const secret of [keys.apiKey, firstApiKey]) assert.equal(bytes.indexOf(secret), -1, `an API key in plain text in ${file}`);
  }
  assert.equal(statSync(join(deployment.dataDir, 'master.key')).mode & 0o077, 0, 'master.key is readable by its owner only');
  const db = new BetterSqlite3(join(deployment.dataDir, 'latchkey.sqlite'), { readonly: true });
  try {
    const rows = db.prepare('select customer_key, api_key_sealed from customers order by id').all() as { customer_key: string; api_key_sealed: string }[];
    assert.deepEqual(rows.map((r) => r.customer_key), [firstKey, String(keys.customerKey)]);
    for (const row of rows) assert.match(row.api_key_sealed, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
  } finally {
    db.close();
  }
});

/** A POST whose body is sent in two parts: the request is in flight until `finish()` is called. */
function slowPost(url: string, headers: Record<string, string>, body: string) {
  const cut = Math.floor(body.length / 2);
  let finish!: () => void;
  const response = new Promise<{ status: number; body: string }>((done, reject) => {
    const request = http.request(url, { method: 'POST', agent: false, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => { text += c; }).on('end', () => done({ status: res.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    request.write(body.slice(0, cut));
    finish = () => request.end(body.slice(cut));
  });
  return { response, finish: () => finish() };
}

const SEVERAL = 'several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves';

test('with several customers and no site customer key: one line at startup, the site answers 503 with the reason, management /readyz says why', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const first = JSON.parse((await runCli(deployment, ['customer', 'create', '--email', 'one@example.test', '--json'])).stdout) as { customerKey: number; apiKey: string };
  assert.equal((await runCli(deployment, ['customer', 'create', '--email', 'two@example.test', '--json'])).code, 0);

  const server = await startServer(t, deployment);
  assert.equal(server.stderr(), `latchkey: content site not serving: ${SEVERAL}\n`);
  const logged = server.stdout().split('\n').filter((line) => line.includes('content site not serving'));
  assert.equal(logged.length, 1, 'logged once');
  assert.equal(JSON.parse(logged[0]).reason, SEVERAL);
  assert.equal((await countUsers(deployment, first.customerKey, first.apiKey)).status, 200, 'the admin API runs');

  const unavailable = { status: 'error', error: 'SERVICE_UNAVAILABLE', code: '503', error_description: SEVERAL };
  for (const [method, path] of [['GET', '/cms-json/cms/v2/posts'], ['POST', '/cms-json/api/v1/token'], ['GET', '/rest/api/2/myself'], ['GET', '/openapi.json']]) {
    const response = await fetch(`${deployment.siteUrl}${path}`, { method });
    assert.equal(response.status, 503, path);
    assert.deepEqual(await response.json(), unavailable, path);
  }
  const health = await fetch(`${deployment.siteUrl}/healthz`);
  assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }], 'the process is alive');
  const ready = await fetch(`${deployment.siteUrl}/readyz`);
  assert.deepEqual([ready.status, await ready.json()], [503, { status: 'unavailable' }], 'the public face gives no detail');
  const identityReady = await fetch(`${deployment.identityUrl}/readyz`);
  assert.deepEqual([identityReady.status, await identityReady.json()], [200, { status: 'ok' }]);
  const managed = await fetch(`${deployment.managementUrl}/readyz`);
  assert.equal(managed.status, 503);
  assert.deepEqual(await managed.json(), { status: 'unavailable', checks: { database: 'ok', site: SEVERAL } });
  assert.deepEqual(await stopServer(server), { code: 0, signal: null });
});

test('a second customer created later does not change the customer the site serves, across a restart', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const first = await startServer(t, deployment);
  const { customerKey, apiKey } = readBanner(first.stdout());
  const password = 'a long password for the site';
  const created = await fetch(`${deployment.identityUrl}/api/admin/users/create`, {
    method: 'POST',
    headers: signedHeaders(customerKey, apiKey),
    body: JSON.stringify({ customerKey, username: 'siteuser', email: 'siteuser@example.test', firstName: 'S', lastName: 'U', password }),
  });
  assert.equal(created.status, 200, await created.text());
  const login = () => fetch(`${deployment.siteUrl}/cms-json/api/v1/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'siteuser', password }),
  });
  assert.equal((await login()).status, 200);

  assert.equal((await runCli(deployment, ['customer', 'create', '--email', 'second@example.test', '--json'])).code, 0);
  assert.deepEqual(await stopServer(first), { code: 0, signal: null });

  const second = await startServer(t, deployment);
  assert.equal(second.stderr(), '', 'no complaint: the site keeps its customer');
  const again = await login();
  assert.equal(again.status, 200, await again.clone().text());
  assert.equal(typeof (await again.json() as { jwt_token?: unknown }).jwt_token, 'string');
  const managed = await fetch(`${deployment.managementUrl}/readyz`);
  assert.deepEqual([managed.status, await managed.json()], [200, { status: 'ok', checks: { database: 'ok', site: 'ok' } }]);
  assert.deepEqual(await stopServer(second), { code: 0, signal: null });
});

test('the management interface serves both faces\' metrics and health on loopback; the public faces do not serve /metrics', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const server = await startServer(t, deployment);
  await fetch(`${deployment.identityUrl}/healthz`);
  await fetch(`${deployment.siteUrl}/healthz`);
  for (const base of [deployment.identityUrl, deployment.siteUrl]) {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 404, base);
  }
  const metrics = await fetch(`${deployment.managementUrl}/metrics`);
  assert.equal(metrics.status, 200);
  const text = await metrics.text();
  assert.match(text, /^latchkey_http_requests_total\{face="identity",method="GET",route="\/healthz",status_code="200"\} 1$/m);
  assert.match(text, /^latchkey_http_requests_total\{face="site",method="GET",route="\/healthz",status_code="200"\} 1$/m);
  assert.match(text, /^latchkey_http_requests_total\{face="identity",method="GET",route="unmatched",status_code="404"\} 1$/m);
  const health = await fetch(`${deployment.managementUrl}/healthz`);
  assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }]);
  assert.deepEqual(await stopServer(server), { code: 0, signal: null });
});

/** Runs the server with `env` until it exits on its own (it is expected not to start). */
function runServerToExit(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn('sh', ['-c', START_COMMAND], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

test('a port in use (identity, site or management): one line naming its setting, exit 1, before any key, link or listening line; the next start prints them', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const ports: [string, string][] = [
    ['LATCHKEY_IDENTITY_PORT', deployment.env.LATCHKEY_IDENTITY_PORT],
    ['LATCHKEY_SITE_PORT', deployment.env.LATCHKEY_SITE_PORT],
    ['LATCHKEY_MANAGEMENT_PORT', deployment.env.LATCHKEY_MANAGEMENT_PORT],
  ];
  for (const [setting, port] of ports) {
    const squatter = createServer();
    await new Promise<void>((done) => squatter.listen(Number(port), '127.0.0.1', done));
    try {
      const refused = await runServerToExit(deployment.env);
      assert.equal(refused.code, 1, setting);
      assert.equal(refused.stderr, `latchkey: port ${port} (${setting}) is already in use\n`, setting);
      assert.doesNotMatch(refused.stdout, /API key|Customer key|first-sign-in|Console:|Server listening/, `${setting}: ${refused.stdout}`);
    } finally {
      await new Promise((done) => squatter.close(done));
    }
  }
  // Two settings naming one port: the second is refused, and the line says which other setting has it.
  const clash = await runServerToExit({ ...deployment.env, LATCHKEY_SITE_PORT: deployment.env.LATCHKEY_IDENTITY_PORT });
  assert.equal(clash.code, 1);
  assert.equal(clash.stderr, `latchkey: port ${deployment.env.LATCHKEY_IDENTITY_PORT} (LATCHKEY_SITE_PORT) is already in use (LATCHKEY_IDENTITY_PORT names the same port)\n`);
  assert.doesNotMatch(clash.stdout, /API key|first-sign-in|Server listening/);

  // Nothing was spent: the first start that gets its ports creates the customer and prints the keys and the link.
  const server = await startServer(t, deployment);
  readBanner(server.stdout());
  assert.match(server.stdout(), /\/console\/first-sign-in\//);
  assert.deepEqual(await stopServer(server), { code: 0, signal: null });
});

const KEY_MISSING = /^latchkey: the master key does not open this database's secrets: set LATCHKEY_MASTER_KEY \(or copy master\.key from the data directory of the node that created the database to (\S+)\) to that node's key\n$/;

/** Node A creates the database and its first customer; node B, another data dir on the same database without A's key, must not start. */
async function secondNodeWithoutTheKey(t: TestContext, databaseUrl: string | undefined) {
  const a = await newDeployment(t);
  const b = await newDeployment(t);
  const url = databaseUrl ?? join(a.dataDir, 'latchkey.sqlite');
  a.env.LATCHKEY_DATABASE_URL = url;
  b.env.LATCHKEY_DATABASE_URL = url;
  const nodeA = await startServer(t, a);
  const { customerKey, apiKey } = readBanner(nodeA.stdout());

  const refused = await runServerToExit(b.env);
  assert.equal(refused.code, 1);
  const match = KEY_MISSING.exec(refused.stderr);
  assert.ok(match, `stderr: ${refused.stderr}`);
  assert.equal(match[1], join(b.dataDir, 'master.key'));
  assert.doesNotMatch(refused.stderr + refused.stdout, /\n\s+at /, 'no stack trace');

  // A wrong key given in the environment: named as such.
  const wrong = await runServerToExit({ ...b.env, LATCHKEY_MASTER_KEY: 'ab'.repeat(32) });
  assert.equal(wrong.code, 1);
  assert.equal(wrong.stderr, "latchkey: the master key in LATCHKEY_MASTER_KEY does not open this database's secrets: set LATCHKEY_MASTER_KEY to the master key of the node that created the database\n");

  // With A's key shared, B starts and accepts A's signed requests.
  const shared = { ...b, env: { ...b.env, LATCHKEY_MASTER_KEY: readFileSync(join(a.dataDir, 'master.key'), 'utf8').trim() } };
  const nodeB = await startServer(t, shared);
  assert.equal((await countUsers(shared, customerKey, apiKey)).status, 200);
  assert.deepEqual(await stopServer(nodeB), { code: 0, signal: null });
  assert.deepEqual(await stopServer(nodeA), { code: 0, signal: null });
}

test('a second node without the first node\'s master key exits 1 with one line saying so (SQLite file shared)', { timeout: LIMIT_MS }, async (t) => {
  await secondNodeWithoutTheKey(t, undefined);
});

test('a second node without the first node\'s master key exits 1 with one line saying so (PostgreSQL)', { timeout: LIMIT_MS, skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async (t) => {
  await secondNodeWithoutTheKey(t, await emptyPostgresSchemaUrl(t, 'lk_server'));
});

test('SIGTERM lets in-flight requests complete, then the process exits 0', { timeout: LIMIT_MS }, async (t) => {
  const deployment = await newDeployment(t);
  const server = await startServer(t, deployment);
  const { customerKey, apiKey } = readBanner(server.stdout());

  // Half-sent bodies: these requests are in flight until the rest of each body arrives.
  const slow = Array.from({ length: 3 }, (_, i) => slowPost(`${deployment.identityUrl}/api/admin/users/create`, {
    ...signedHeaders(customerKey, apiKey), 'X-Request-Id': `drain-${i}`,
  }, JSON.stringify({ customerKey, username: `drain${i}`, email: `drain${i}@example.test`, firstName: 'D', lastName: String(i), password: `a long password number ${i}` })));
  for (let i = 0; i < 3; i++) await server.waitForLines(new RegExp(`"reqId":"drain-${i}".*"msg":"incoming request"`), 1);
  // And a few complete ones hashing passwords as the signal arrives.
  const quick = Array.from({ length: 3 }, (_, i) => fetch(`${deployment.identityUrl}/api/admin/users/create`, {
    method: 'POST',
    headers: signedHeaders(customerKey, apiKey),
    body: JSON.stringify({ customerKey, username: `quick${i}`, email: `quick${i}@example.test`, firstName: 'Q', lastName: String(i), password: `another long password ${i}` }),
  }));
  await server.waitForLines(/"url":"\/api\/admin\/users\/create".*"msg":"incoming request"/, 6);

  server.child.kill('SIGTERM');
  await server.waitFor(/"msg":"shutting down: draining in-flight requests"/);
  assert.equal(server.child.exitCode, null, 'the process waits for its requests');
  for (const s of slow) s.finish();

  const answers = await Promise.all([...slow.map((s) => s.response), ...quick.map(async (r) => {
    const res = await r;
    return { status: res.status, body: await res.text() };
  })]);
  for (const answer of answers) {
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).status, 'SUCCESS');
  }
  assert.deepEqual(await server.exited, { code: 0, signal: null });

  // Every one of them was written before the database closed.
  const restarted = await startServer(t, deployment);
  const count = await countUsers(deployment, customerKey, apiKey);
  assert.deepEqual((await count.json() as { data: unknown }).data, { count: 6 });
  assert.deepEqual(await stopServer(restarted), { code: 0, signal: null });
});
