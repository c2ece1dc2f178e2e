/**
 * PostgreSQL unavailable under load (issue 17 part 3). A real server process reaches its database
 * through a TCP proxy that the test breaks: first it refuses connections (the database stopped), then
 * it swallows them (a network that never answers). Meanwhile a signed admin request, a site JWT and a
 * site API key are tried without pause: each is answered within a bounded time, refused with 503 in
 * its face's body (never 2xx: nothing is served unchecked from a cache, never 500), the management
 * /readyz says unavailable, and once the database is back every kind succeeds again without a restart,
 * within 30 s. The recovery times are printed (test diagnostics).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { CONNECT_TIMEOUT_MS } from '../../src/store/db.ts';
import {
  admin, type Customer, PASSWORD, postgresBehindProxy, postgresUrl, siteJwt, sleep, startServer, until, withComposition,
} from './harness.ts';

const POSTS = '/cms-json/cms/v2/posts';
/** Every answer during the outage comes within this (the pool's connect timeout plus slack for a loaded machine). */
const ANSWER_BOUND_MS = CONNECT_TIMEOUT_MS + 2_000;
const OUTAGE_PHASE_MS = 4_000;
const RECOVERY_BOUND_MS = 30_000;

test('PostgreSQL down under load: 503 fast in each face\'s body, fail closed, /readyz unavailable, recovery without restart',
  { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async (t) => {
    const { url, proxy, env } = await postgresBehindProxy(t);

    let customer!: Customer;
    let apiKey = '';
    await withComposition({ ...env, LATCHKEY_DATABASE_URL: url }, async (app) => {
      customer = await app.services.customers.create({ email: 'faults-owner@example.test' });
      await app.services.users.create(customer.customerId, {
        username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', password: PASSWORD, customAttributes: {},
      }, SYSTEM);
      apiKey = (await app.services.siteApiKeys.create(customer.customerId, { login: 'alice', name: 'faults' }, SYSTEM)).apiKey;
    });
    const server = await startServer(t, { ...env, LATCHKEY_SITE_CUSTOMER_KEY: customer.customerKey });
    const jwt = await siteJwt(server.siteUrl, 'alice');

    type Kind = 'admin' | 'jwt' | 'apikey';
    const request = (kind: Kind): Promise<Response> => kind === 'admin'
      ? admin(server.identityUrl, customer, '/users/get', { username: 'alice' }, 15_000)
      : fetch(`${server.siteUrl}${POSTS}`, { headers: { authorization: `Bearer ${kind === 'jwt' ? jwt : apiKey}` }, signal: AbortSignal.timeout(15_000) });
    const ready = () => fetch(`${server.managementUrl}/readyz`, { signal: AbortSignal.timeout(15_000) });

    for (const kind of ['admin', 'jwt', 'apikey'] as const) { const r = await request(kind); assert.equal(r.status, 200, `${kind} ${await r.text()}`); }
    assert.deepEqual(await (await ready()).json(), { status: 'ok', checks: { database: 'ok', site: 'ok' } });

    interface Answer { kind: Kind | 'readyz'; status: number; ms: number; body: unknown; retryAfter: string | null }
    const answers: Answer[] = [];
    const probe = async (kind: Answer['kind']) => {
      const started = performance.now();
      const response = await (kind === 'readyz' ? ready() : request(kind)).catch((error: Error) => {
        throw new Error(`${kind}: ${error.message} (${String((error as { cause?: unknown }).cause)}) after ${Math.round(performance.now() - started)} ms; server alive: ${server.child.exitCode === null}\n${server.stderr.join('')}`);
      });
      const text = await response.text();
      let body: unknown = text;
      try { body = JSON.parse(text); } catch { /* kept as text */ }
      answers.push({ kind, status: response.status, ms: performance.now() - started, body, retryAfter: response.headers.get('retry-after') });
    };
    /** Two clients per kind, each asking again as soon as it has its answer, until `ms` passed. */
    const load = async (ms: number) => {
      const end = Date.now() + ms;
      const client = async (kind: Answer['kind']) => { while (Date.now() < end) await probe(kind); };
      await Promise.all((['admin', 'jwt', 'apikey', 'readyz'] as const).flatMap((kind) => [client(kind), client(kind)]));
    };

    await proxy.refuse();
    // The outage counts from when the node has seen it: the cut reaches its sockets a moment after the
    // proxy makes it, and until then a request may be answered as before (within the caches' 1 s bound).
    await until('the node to see the outage', RECOVERY_BOUND_MS, async () => ((await ready()).status === 503 ? true : undefined));
    await load(OUTAGE_PHASE_MS);
    await proxy.blackhole();
    await load(OUTAGE_PHASE_MS);

    const unavailable = 'The service is temporarily unavailable; retry later.';
    const counts: Record<string, number> = {};
    for (const answer of answers) {
      counts[answer.kind] = (counts[answer.kind] ?? 0) + 1;
      assert.ok(answer.ms < ANSWER_BOUND_MS, `${answer.kind} answered after ${Math.round(answer.ms)} ms`);
      if (answer.kind === 'readyz') {
        assert.deepEqual([answer.status, answer.body], [503, { status: 'unavailable', checks: { database: 'unreachable', site: 'ok' } }], JSON.stringify(answer));
      } else if (answer.kind === 'admin') {
        assert.deepEqual([answer.status, answer.body, answer.retryAfter], [503, { status: 'ERROR', code: '503', message: unavailable }, '5'], JSON.stringify(answer));
      } else {
        assert.deepEqual([answer.status, answer.body, answer.retryAfter],
          [503, { status: 'error', error: 'SERVICE_UNAVAILABLE', code: '503', error_description: unavailable }, '5'], JSON.stringify(answer));
      }
    }
    for (const kind of ['admin', 'jwt', 'apikey', 'readyz']) assert.ok((counts[kind] ?? 0) >= 4, `${kind} was tried during both phases: ${JSON.stringify(counts)}`);

    // The database returns: each kind's first 2xx, timed from here, without restarting the server.
    await proxy.forward();
    const back = performance.now();
    const recovered: Record<string, number> = {};
    await Promise.all((['admin', 'jwt', 'apikey', 'readyz'] as const).map(async (kind) => {
      await until(`${kind} to succeed again`, RECOVERY_BOUND_MS, async () => {
        const response = await (kind === 'readyz' ? ready() : request(kind));
        await response.arrayBuffer();
        if (response.status === 200) return true;
        // Bounded retries, as a client honouring Retry-After would (shorter: the bound is measured).
        await sleep(100);
        return undefined;
      });
      recovered[kind] = Math.round(performance.now() - back);
    }));
    t.diagnostic(`recovery after the database returned (ms to first 200): ${JSON.stringify(recovered)}`);
    t.diagnostic(`answers during the outage: ${JSON.stringify(counts)}, slowest ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms`);
    for (const [kind, ms] of Object.entries(recovered)) assert.ok(ms < RECOVERY_BOUND_MS, `${kind} recovered after ${ms} ms`);
    assert.equal(server.child.exitCode, null, 'the same process served before, during and after');
  });
