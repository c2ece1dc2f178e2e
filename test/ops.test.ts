/**
 * Operability of the identity face: the OpenAPI document and docs page, health and readiness,
 * request ids, JSON logs without secrets, and Prometheus metrics on the management interface.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { compose } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { createTestClock } from '../src/lib/clock.ts';
import { createStore, type Store } from '../src/store/db.ts';
import { adminClient, testEnv } from './helpers/app.ts';
import { tampered } from './helpers/secrets.ts';
import { postgresUrl } from './helpers/stores.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A composed identity face on its own store, optionally logging into `logLines`. */
async function start(t: TestContext, options: { store?: Store; logLines?: string[]; env?: Record<string, string> } = {}) {
  const clock = createTestClock(Date.now());
  const store = options.store ?? await createStore(':memory:');
  const logStream = options.logLines ? { write: (line: string) => { options.logLines!.push(line); } } : undefined;
  const composition = await compose(loadConfig(testEnv(options.env)), { clock, store, logStream });
  const identity = await composition.buildIdentityApp();
  let closed = false;
  const closeStore = async () => { if (!closed) { closed = true; await store.close(); } };
  t.after(async () => { await identity.close(); await closeStore(); });
  const customer = await composition.services.customers.create({ email: `ops-${randomBytes(4).toString('hex')}@example.test` });
  return { clock, composition, identity, customer, closeStore, admin: adminClient(identity, customer, clock) };
}

/** The admin paths the spec and DESIGN.md define; the OpenAPI document must list at least these. */
const SPEC_PATHS = [
  'post /api/admin/users/create', 'post /api/admin/users/update', 'post /api/admin/users/getall', 'post /api/admin/users/get',
  'post /api/admin/users/search', 'post /api/admin/users/delete', 'post /api/admin/users/disable', 'post /api/admin/users/enable',
  'get /api/admin/users/stats/count', 'post /api/admin/users/change-password', 'post /api/admin/groups/getall',
  'post /api/admin/groups/update', 'post /api/admin/groups/members/update', 'post /api/admin/groups/members',
];

test('GET /api/openapi.json is OpenAPI 3.1.0 listing every admin operation once, without the /moas twins', async (t) => {
  const { identity } = await start(t);
  const response = await identity.inject({ method: 'GET', url: '/api/openapi.json' });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  const doc = response.json() as { openapi: string; paths: Record<string, Record<string, unknown>>; components: { securitySchemes: Record<string, unknown> } };
  assert.equal(doc.openapi, '3.1.0');

  // The console's pages are documented beside the API; this compares the API's operations.
  const documented = Object.entries(doc.paths).filter(([path]) => !path.startsWith('/console'))
    .flatMap(([path, operations]) => Object.keys(operations).map((m) => `${m} ${path}`)).sort();
  const registered = identity.registeredRoutes
    // POST /oauth/token is the magic-link routes' bearer option (documented); the landing pages are not API.
    .filter((r) => (r.url.startsWith('/api/') && !r.url.startsWith('/api/docs') && r.url !== '/api/openapi.json') || r.url === '/oauth/token')
    .map((r) => `${r.method.toLowerCase()} ${r.url}`).sort();
  assert.deepEqual(documented, registered);
  for (const path of SPEC_PATHS) assert.ok(documented.includes(path), `${path} is not documented`);
  assert.ok(!documented.some((p) => p.includes('/moas/')), 'the /moas twins are documented');
  assert.ok(identity.registeredRoutes.some((r) => r.url === '/moas/api/admin/users/create'), 'the /moas twins are served');
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['bearer', 'clientBasic', 'customerKey', 'signature', 'timestamp']);
});

test('GET /api/docs serves the docs page', async (t) => {
  const { identity } = await start(t);
  const response = await identity.inject({ method: 'GET', url: '/api/docs' });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.match(response.body, /<html[\s>]/);
  assert.match(response.body, /swagger/i);
});

test('the docs page, its assets and its document carry a CSP, X-Frame-Options DENY and nosniff (issue 22 item 9)', async (t) => {
  const { identity } = await start(t);
  const urls = ['/api/docs', '/api/docs/', '/api/docs/static/index.html', '/api/docs/static/swagger-ui-bundle.js', '/api/docs/static/swagger-ui.css',
    '/api/docs/static/swagger-initializer.js', '/api/docs/json'];
  for (const url of urls) {
    const response = await identity.inject({ method: 'GET', url });
    assert.ok(response.statusCode < 400, `${url}: ${response.statusCode}`);
    // Swagger UI's one inline style (its logo's) by hash; nothing else inline.
    assert.equal(response.headers['content-security-policy'], "default-src 'none'; script-src 'self'; "
      + "style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data:; "
      + "font-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'", url);
    assert.equal(response.headers['x-frame-options'], 'DENY', url);
    assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
  }
  // The page itself has no inline script or style for the policy to allow.
  const page = await identity.inject({ method: 'GET', url: '/api/docs' });
  assert.doesNotMatch(page.body, /<script(?![^>]*\ssrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=/i);
  // Only the docs: the admin API's answers are unchanged.
  const other = await identity.inject({ method: 'GET', url: '/healthz' });
  assert.equal(other.headers['x-frame-options'], undefined);
});

test('/healthz and /readyz answer 200; /readyz is 503 once the database is gone', async (t) => {
  const { identity, closeStore } = await start(t);
  const ok = { status: 'ok' };
  for (const url of ['/healthz', '/readyz']) {
    const response = await identity.inject({ method: 'GET', url });
    assert.equal(response.statusCode, 200, url);
    assert.deepEqual(response.json(), ok, url);
  }
  await closeStore();
  const ready = await identity.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 503);
  assert.deepEqual(ready.json(), { status: 'unavailable' });
  const health = await identity.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200, 'the process itself is still healthy');
  assert.deepEqual(health.json(), ok);
});

test('/readyz is 503 when the PostgreSQL pool is gone', { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async (t) => {
  const schema = `lk_ops_${process.pid}_${randomBytes(3).toString('hex')}`;
  t.after(async () => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });
  const store = await createStore(postgresUrl!, { schema, poolSize: 2 });
  const { identity, closeStore } = await start(t, { store });
  assert.equal((await identity.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  await closeStore();
  const ready = await identity.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 503);
  assert.deepEqual(ready.json(), { status: 'unavailable' });
});

test('every response carries x-request-id, echoing a sane incoming one', async (t) => {
  const { identity, admin } = await start(t);
  const requests = [
    { method: 'GET', url: '/healthz' },
    { method: 'GET', url: '/readyz' },
    { method: 'GET', url: '/api/openapi.json' },
    { method: 'GET', url: '/api/docs' },
    { method: 'GET', url: '/no/such/page' },
    { method: 'GET', url: '/api/admin/users/stats/count' },
    { method: 'GET', url: '/api/admin/users/stats/count', headers: admin.headers() },
    { method: 'POST', url: '/api/admin/users/disable', headers: { 'content-type': 'application/json' }, payload: '{}' },
    { method: 'POST', url: '/api/admin/groups/getall', headers: { ...admin.headers(), 'content-type': 'application/json' }, payload: '{' },
    { method: 'POST', url: '/api/admin/groups/getall', headers: { ...admin.headers(), 'content-type': 'application/json' }, payload: 'x'.repeat(300_000) },
    { method: 'POST', url: '/api/admin/%E0%A4%A', headers: admin.headers() },
  ] as const;
  for (const request of requests) {
    const where = `${request.method} ${request.url}`;
    const fresh = await identity.inject({ ...request, headers: { ...('headers' in request ? request.headers : {}) } });
    assert.match(String(fresh.headers['x-request-id']), UUID, where);
    const echoed = await identity.inject({ ...request, headers: { ...('headers' in request ? request.headers : {}), 'x-request-id': 'trace-42.a:b_c' } });
    assert.equal(echoed.headers['x-request-id'], 'trace-42.a:b_c', where);
  }
  for (const insane of ['has space', 'x'.repeat(65), 'line\u2028break', 'ünïcode', '<script>', '']) {
    const response = await identity.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': insane } });
    assert.match(String(response.headers['x-request-id']), UUID, JSON.stringify(insane));
  }
});

test('JSON logs carry the request id and never the credentials or passwords of a request', async (t) => {
  const logLines: string[] = [];
  const { identity, customer, admin } = await start(t, { logLines, env: { LATCHKEY_LOG_LEVEL: 'trace' } });
  const password = 'Correct-Horse-Battery-9f3a';
  const newPassword = 'Staple-Giraffe-Lantern-41c7';
  const headers = admin.headers();
  const secrets = [customer.apiKey, headers.authorization, password, newPassword];

  const created = await identity.inject({
    method: 'POST', url: '/api/admin/users/create',
    headers: { ...headers, 'content-type': 'application/json', 'api-key': customer.apiKey, 'x-request-id': 'log-test-1' },
    payload: { customerKey: customer.customerKey, username: 'logged', email: 'logged@example.test', firstName: 'L', lastName: 'G', password },
  });
  assert.equal(created.statusCode, 200, created.body);
  const changed = await identity.inject({
    method: 'POST', url: '/moas/api/admin/users/change-password',
    headers: { ...headers, 'content-type': 'application/json', 'x-request-id': 'log-test-2' },
    payload: { customerKey: customer.customerKey, username: 'logged', oldPassword: password, password: newPassword },
  });
  assert.equal(changed.statusCode, 200, changed.body);
  // A refused request: a wrong Api-Key header is a secret-looking value too.
  const wrongKey = tampered(customer.apiKey, 4);
  secrets.push(wrongKey);
  const refused = await identity.inject({
    method: 'GET', url: '/api/admin/users/stats/count', headers: { ...headers, 'api-key': wrongKey, 'x-request-id': 'log-test-3' },
  });
  assert.equal(refused.statusCode, 401);

  const records = logLines.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const id of ['log-test-1', 'log-test-2', 'log-test-3']) {
    const mine = records.filter((r) => r.reqId === id);
    assert.ok(mine.some((r) => r.msg === 'incoming request'), `no incoming request line for ${id}`);
    assert.ok(mine.some((r) => r.msg === 'request completed'), `no completion line for ${id}`);
  }
  const all = logLines.join('');
  for (const secret of secrets) assert.ok(!all.includes(secret), `a secret reached the logs: ${secret.slice(0, 6)}…`);
});

/** Parses the Prometheus text format into `name{labels}` → value, checking every line's grammar. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  assert.ok(text.endsWith('\n'));
  for (const line of text.trimEnd().split('\n')) {
    if (line.startsWith('#')) {
      assert.match(line, /^# (HELP [a-z_]+ .+|TYPE [a-z_]+ (counter|gauge|histogram))$/, line);
      continue;
    }
    const match = /^([a-z_]+(?:\{(?:[a-z_]+="(?:[^"\\]|\\.)*",?)*\})?) (-?[0-9.e+]+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    samples.set(match[1], Number(match[2]));
  }
  return samples;
}

test('the management interface counts both faces\' requests by face, route and status, with a latency histogram and process memory', async (t) => {
  const { identity, admin, customer, composition } = await start(t);
  const site = await composition.buildSiteApp({ customerKey: customer.customerKey });
  const management = await composition.buildManagementApp({ siteNotReady: () => undefined });
  t.after(async () => { await site.close(); await management.close(); });
  await identity.inject({ method: 'GET', url: '/healthz' });
  await identity.inject({ method: 'GET', url: '/healthz' });
  await identity.inject({ method: 'GET', url: '/no/such/page' });
  await identity.inject({ method: 'GET', url: '/another/missing/page' });
  assert.equal((await admin.get('/admin/users/stats/count')).statusCode, 200);
  assert.equal((await identity.inject({ method: 'GET', url: '/api/admin/users/stats/count' })).statusCode, 401);
  const moas = await identity.inject({
    method: 'POST', url: '/moas/api/admin/groups/getall', headers: { ...admin.headers(), 'content-type': 'application/json' },
    payload: { customerKey: customer.customerKey, batchSize: 10, batchNo: 1 },
  });
  assert.equal(moas.statusCode, 200);
  await site.inject({ method: 'GET', url: '/healthz' });
  assert.equal((await site.inject({ method: 'GET', url: '/cms-json/cms/v2/posts' })).statusCode, 401);

  const response = await management.inject({ method: 'GET', url: '/metrics' });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  const samples = parseMetrics(response.body);
  const requests = (face: string, method: string, route: string, status: number) =>
    samples.get(`latchkey_http_requests_total{face="${face}",method="${method}",route="${route}",status_code="${status}"}`);
  assert.equal(requests('identity', 'GET', '/healthz', 200), 2);
  assert.equal(requests('identity', 'GET', 'unmatched', 404), 2, 'unknown URLs share one label');
  assert.equal(requests('identity', 'GET', '/api/admin/users/stats/count', 200), 1);
  assert.equal(requests('identity', 'GET', '/api/admin/users/stats/count', 401), 1);
  assert.equal(requests('identity', 'POST', '/moas/api/admin/groups/getall', 200), 1);
  assert.equal(requests('site', 'GET', '/healthz', 200), 1);
  assert.equal(requests('site', 'GET', '/cms-json/cms/v2/posts', 401), 1);
  assert.ok(![...samples.keys()].some((k) => k.includes('/no/such/page')), 'a caller-chosen URL became a label');

  const histogram = (suffix: string) => [...samples.entries()]
    .filter(([k]) => k.startsWith(`latchkey_http_request_duration_seconds${suffix}{face="identity",method="GET",route="/healthz"`));
  const buckets = histogram('_bucket');
  assert.deepEqual(buckets.map(([k]) => /le="([^"]+)"/.exec(k)![1]),
    ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf']);
  const counts = buckets.map(([, v]) => v);
  for (let i = 1; i < counts.length; i++) assert.ok(counts[i] >= counts[i - 1], 'buckets are cumulative');
  assert.equal(counts.at(-1), 2);
  assert.deepEqual(histogram('_count').map(([, v]) => v), [2]);
  const [[, sum]] = histogram('_sum');
  assert.ok(sum >= 0 && sum < 60);

  assert.ok((samples.get('process_resident_memory_bytes') ?? 0) > 1_000_000);
  assert.ok((samples.get('nodejs_heap_used_bytes') ?? 0) > 0);
  assert.ok(Math.abs((samples.get('process_start_time_seconds') ?? 0) - (Date.now() / 1000 - process.uptime())) < 5);

  // /metrics and the health routes are not in the OpenAPI document.
  const doc = (await identity.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, unknown> };
  assert.ok(!('/metrics' in doc.paths) && !('/healthz' in doc.paths));
});

test('the public faces do not serve /metrics: a plain 404 in each face\'s error shape', async (t) => {
  const { identity, customer, composition } = await start(t);
  const site = await composition.buildSiteApp({ customerKey: customer.customerKey });
  t.after(() => site.close());
  const onIdentity = await identity.inject({ method: 'GET', url: '/metrics' });
  assert.equal(onIdentity.statusCode, 404);
  assert.deepEqual(onIdentity.json(), { status: 'ERROR', code: '404', message: 'Route GET /metrics not found' });
  const onSite = await site.inject({ method: 'GET', url: '/metrics' });
  assert.equal(onSite.statusCode, 404);
  assert.deepEqual(onSite.json(), { status: 'error', error: 'NOT_FOUND', code: '404', error_description: 'No such route.' });
});

test('the management interface serves /healthz and /readyz with the reason of each check, and listens on 127.0.0.1 by default', async (t) => {
  const { composition, closeStore } = await start(t, { env: { LATCHKEY_MANAGEMENT_PORT: '0' } });
  const { config } = composition;
  assert.equal(config.managementHost, '127.0.0.1');
  assert.equal(loadConfig(testEnv()).managementPort, 9000, 'port 9000 unless configured');
  let siteReason: string | undefined;
  const management = await composition.buildManagementApp({ siteNotReady: () => siteReason });
  t.after(() => management.close());
  await management.listen({ host: config.managementHost, port: config.managementPort });
  const address = management.server.address() as { address: string; port: number };
  assert.equal(address.address, '127.0.0.1');
  const base = `http://127.0.0.1:${address.port}`;

  const health = await fetch(`${base}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok' });
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: 'ok', checks: { database: 'ok', site: 'ok' } });
  const metrics = await fetch(`${base}/metrics`);
  assert.equal(metrics.status, 200);
  assert.match(await metrics.text(), /^# HELP latchkey_http_requests_total /);

  siteReason = 'several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves';
  const unbound = await fetch(`${base}/readyz`);
  assert.equal(unbound.status, 503);
  assert.deepEqual(await unbound.json(), { status: 'unavailable', checks: { database: 'ok', site: siteReason } });
  siteReason = undefined;
  await closeStore();
  const noDatabase = await fetch(`${base}/readyz`);
  assert.equal(noDatabase.status, 503);
  assert.deepEqual(await noDatabase.json(), { status: 'unavailable', checks: { database: 'unreachable', site: 'ok' } });
});
