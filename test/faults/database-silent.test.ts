/**
 * PostgreSQL gone silent mid-query (issue 17 part 3): the server's pooled connections stay open but
 * the network stops passing bytes, so a statement written to one is never answered and no error ever
 * comes (a partition, a frozen host). Without a bound the request would wait for TCP to give up,
 * minutes later. Every statement is bounded (store/db.ts QUERY_TIMEOUT_MS): the requests caught in
 * it answer 503 with Retry-After within that bound, and once the network heals the same process
 * serves again. Measured: the slowest answer and the recovery time (test diagnostics).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { QUERY_TIMEOUT_MS } from '../../src/store/db.ts';
import {
  admin, type Customer, PASSWORD, postgresBehindProxy, postgresUrl, siteJwt, sleep, startServer, until, withComposition,
} from './harness.ts';

/** The statement bound plus slack for a loaded two-core machine. */
const ANSWER_BOUND_MS = QUERY_TIMEOUT_MS + 2_000;
const RECOVERY_BOUND_MS = 30_000;
const UNAVAILABLE = 'The service is temporarily unavailable; retry later.';

test('PostgreSQL silent mid-query: the requests waiting on it answer 503 within the statement bound, then the node recovers',
  { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async (t) => {
    const { url, proxy, env } = await postgresBehindProxy(t);

    let customer!: Customer;
    await withComposition({ ...env, LATCHKEY_DATABASE_URL: url }, async (app) => {
      customer = await app.services.customers.create({ email: 'silent-owner@example.test' });
      await app.services.users.create(customer.customerId, {
        username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', password: PASSWORD, customAttributes: {},
      }, SYSTEM);
    });
    const server = await startServer(t, { ...env, LATCHKEY_SITE_CUSTOMER_KEY: customer.customerKey });
    const adminRequest = () => admin(server.identityUrl, customer, '/users/get', { username: 'alice' }, 30_000);
    const tokenRequest = () => fetch(`${server.siteUrl}/cms-json/api/v1/token`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'alice', password: PASSWORD }), signal: AbortSignal.timeout(30_000),
    });

    // Several requests at once first, so the pool holds several open connections for the stall to catch.
    for (const response of await Promise.all([adminRequest(), adminRequest(), adminRequest(), tokenRequest()])) {
      assert.equal(response.status, 200, await response.text());
    }
    await siteJwt(server.siteUrl, 'alice');

    await proxy.stall();
    const timed = async (kind: 'admin' | 'site token', send: () => Promise<Response>) => {
      const started = performance.now();
      const response = await send();
      return { kind, status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() as unknown, ms: performance.now() - started };
    };
    const answers = await Promise.all([
      timed('admin', adminRequest), timed('admin', adminRequest), timed('site token', tokenRequest), timed('site token', tokenRequest),
    ]);
    for (const answer of answers) {
      assert.ok(answer.ms < ANSWER_BOUND_MS, `${answer.kind} answered after ${Math.round(answer.ms)} ms`);
      const body = answer.kind === 'admin'
        ? { status: 'ERROR', code: '503', message: UNAVAILABLE }
        : { status: 'error', error: 'SERVICE_UNAVAILABLE', code: '503', error_description: UNAVAILABLE };
      assert.deepEqual([answer.status, answer.retryAfter, answer.body], [503, '5', body], JSON.stringify(answer));
    }

    await proxy.forward();
    const back = performance.now();
    await until('a signed admin request and a site login to succeed again', RECOVERY_BOUND_MS, async () => {
      const [a, b] = await Promise.all([adminRequest(), tokenRequest()]);
      await Promise.all([a.arrayBuffer(), b.arrayBuffer()]);
      if (a.status === 200 && b.status === 200) return true;
      await sleep(100);
      return undefined;
    });
    const recovered = Math.round(performance.now() - back);
    t.diagnostic(`silent database: answers ${answers.map((a) => `${a.kind} ${a.status} in ${Math.round(a.ms)} ms`).join(', ')} (bound ${QUERY_TIMEOUT_MS} ms); recovery ${recovered} ms`);
    assert.equal(server.child.exitCode, null, 'the same process served before, during and after');
    const timeouts = server.logLines().filter((line) => line.msg === 'database unavailable: answered 503' && line.reason === 'Query read timeout');
    assert.ok(timeouts.length > 0, 'the statement bound ended the wait (logged as such)');
  });
