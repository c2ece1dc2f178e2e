/**
 * Redis unavailable (issue 17 part 3). With LATCHKEY_REDIS_URL set the admin replay guard lives in
 * Redis, so a signed admin request cannot be checked without it: it must be refused with 503 and
 * Retry-After (fail closed), never admitted and never a 500, and served again once Redis is back,
 * without a restart. A private redis-server (no persistence) behind a TCP proxy: first the server is
 * killed (connections refused), then it runs again but the proxy swallows every byte (a Redis that
 * never answers). The outage is logged at warn, naming Redis, without a stack; nothing at error level.
 * Readiness says so: the identity face's /readyz is 503 and the management /readyz names Redis.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { freePort } from '../helpers/ports.ts';
import { admin, freshDatabase, PASSWORD, serverEnv, sleep, startServer, startTcpProxy, until, withComposition, type Customer } from './harness.ts';

const REDIS_SERVER = '/usr/bin/redis-server';
/** store/redis.ts: a command waits at most 1 s; a request may send two (rate limit, replay guard). */
const ANSWER_BOUND_MS = 2 * 1_000 + 2_000;
const RECOVERY_BOUND_MS = 30_000;
const UNAVAILABLE = { status: 'ERROR', code: '503', message: 'The service is temporarily unavailable; retry later.' };

/** A redis-server of the test's own on `port`, resolved once it accepts connections; killed in t.after. */
async function startRedis(t: TestContext, port: number): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.after(async () => { if (child.exitCode === null && child.signalCode === null) { child.kill('SIGKILL'); await exited; } });
  await until('redis-server to listen', 10_000, () => new Promise<true | undefined>((resolve) => {
    const socket = createConnection(port, '127.0.0.1', () => { socket.end(); resolve(true); });
    socket.once('error', () => resolve(undefined));
  }));
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

test('Redis down: a signed admin request is refused with 503 and Retry-After, fast, and served again without a restart',
  { skip: existsSync(REDIS_SERVER) ? false : `${REDIS_SERVER} is not installed` }, async (t) => {
    const redisPort = await freePort();
    let redis = await startRedis(t, redisPort);
    const proxy = await startTcpProxy(t, { host: '127.0.0.1', port: redisPort });
    const { url, dir } = await freshDatabase(t, 'sqlite');
    const env = await serverEnv(url, dir, { LATCHKEY_REDIS_URL: `redis://127.0.0.1:${proxy.port}` });

    let customer!: Customer;
    await withComposition({ ...env, LATCHKEY_REDIS_URL: `redis://127.0.0.1:${redisPort}` }, async (app) => {
      customer = await app.services.customers.create({ email: 'redis-owner@example.test' });
      await app.services.users.create(customer.customerId, {
        username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', password: PASSWORD, customAttributes: {},
      }, SYSTEM);
    });
    const server = await startServer(t, env);
    const request = () => admin(server.identityUrl, customer, '/users/get', { username: 'alice' }, 15_000);

    const before = await request();
    assert.equal(before.status, 200, await before.text());
    const readiness = async () => {
      const management = await fetch(`${server.managementUrl}/readyz`, { signal: AbortSignal.timeout(15_000) });
      const identity = await fetch(`${server.identityUrl}/readyz`, { signal: AbortSignal.timeout(15_000) });
      await identity.arrayBuffer();
      return { management: management.status, checks: (await management.json() as { checks: Record<string, string> }).checks, identity: identity.status };
    };
    assert.deepEqual(await readiness(), { management: 200, checks: { database: 'ok', redis: 'ok', site: 'ok' }, identity: 200 });

    interface Answer { status: number; body: unknown; retryAfter: string | null; ms: number }
    const answers: Answer[] = [];
    const probe = async () => {
      const started = performance.now();
      const response = await request();
      const text = await response.text();
      let body: unknown = text;
      try { body = JSON.parse(text); } catch { /* kept as text */ }
      answers.push({ status: response.status, body, retryAfter: response.headers.get('retry-after'), ms: performance.now() - started });
    };
    /** Three clients asking again as soon as answered, for `ms`. */
    const load = async (ms: number) => {
      const end = Date.now() + ms;
      await Promise.all([0, 1, 2].map(async () => { while (Date.now() < end) await probe(); }));
    };

    // Redis stopped: the proxy's upstream refuses, so every connection is cut at once.
    await kill(redis);
    await load(3_000);
    assert.deepEqual(await readiness(), { management: 503, checks: { database: 'ok', redis: 'unreachable', site: 'ok' }, identity: 503 });
    const refused = answers.length;
    // Redis runs again but the network swallows everything: commands meet their timeout.
    redis = await startRedis(t, redisPort);
    await proxy.blackhole();
    await load(3_000);

    for (const answer of answers) {
      assert.ok(answer.ms < ANSWER_BOUND_MS, `answered after ${Math.round(answer.ms)} ms: ${JSON.stringify(answer)}`);
      assert.deepEqual([answer.status, answer.body, answer.retryAfter], [503, UNAVAILABLE, '5'], JSON.stringify(answer));
    }
    assert.ok(refused >= 3 && answers.length - refused >= 3, `both phases were tried: ${refused} then ${answers.length - refused}`);

    await proxy.forward();
    const back = performance.now();
    await until('a signed admin request to succeed again', RECOVERY_BOUND_MS, async () => {
      const response = await request();
      await response.arrayBuffer();
      if (response.status === 200) return true;
      assert.equal(response.status, 503);
      await sleep(100);
      return undefined;
    });
    const recovered = Math.round(performance.now() - back);
    t.diagnostic(`recovery after Redis returned: ${recovered} ms to the first 200; ${answers.length} answers during the outage, all 503, slowest ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms`);
    assert.ok(recovered < RECOVERY_BOUND_MS);
    assert.deepEqual(await readiness(), { management: 200, checks: { database: 'ok', redis: 'ok', site: 'ok' }, identity: 200 });
    assert.equal(server.child.exitCode, null, 'the same process served before, during and after');

    // The outage in the logs: warn lines naming Redis, no stack; no "unexpected error" at error level.
    const lines = server.logLines();
    const outage = lines.filter((line) => line.msg === 'redis unavailable: answered 503');
    assert.ok(outage.length >= answers.length, `one warn line per refused request (${outage.length} for ${answers.length})`);
    for (const line of outage) {
      assert.equal(line.level, 40, JSON.stringify(line));
      assert.equal(line.dependency, 'redis');
      assert.ok(!('err' in line) && !JSON.stringify(line).includes('"stack"'), `no stack: ${JSON.stringify(line)}`);
    }
    assert.deepEqual(lines.filter((line) => (line.level as number) >= 50 && line.msg === 'unexpected error'), [], 'no 503 logged as an unexpected error');
  });

test('Redis out of memory (maxmemory reached, noeviction): a signed admin request is refused with 503, not a 500, and served again once Redis has room',
  { skip: existsSync(REDIS_SERVER) ? false : `${REDIS_SERVER} is not installed` }, async (t) => {
    const redisPort = await freePort();
    await startRedis(t, redisPort);
    const { url, dir } = await freshDatabase(t, 'sqlite');
    const env = await serverEnv(url, dir, { LATCHKEY_REDIS_URL: `redis://127.0.0.1:${redisPort}` });
    const customer = await withComposition(env, async (app) => {
      const created = await app.services.customers.create({ email: 'redis-full@example.test' });
      await app.services.users.create(created.customerId, {
        username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', customAttributes: {},
      }, SYSTEM);
      return created;
    });
    const server = await startServer(t, env);
    const request = () => admin(server.identityUrl, customer, '/users/get', { username: 'alice' });
    assert.equal((await request()).status, 200);

    // Below what Redis already uses: every write (the replay guard's) now answers "OOM command not allowed".
    const { Redis } = await import('ioredis');
    const control = new Redis(redisPort, '127.0.0.1', { lazyConnect: true });
    await control.connect();
    t.after(() => control.disconnect());
    await control.config('SET', 'maxmemory-policy', 'noeviction');
    await control.config('SET', 'maxmemory', '1');
    const full = await request();
    assert.deepEqual([full.status, await full.json(), full.headers.get('retry-after')], [503, UNAVAILABLE, '5']);

    await control.config('SET', 'maxmemory', '0');
    assert.equal((await request()).status, 200);
    // The child's log lines reach this process through a pipe, after the answers they describe.
    await until('the outage logged at warn', RECOVERY_BOUND_MS, async () => {
      if (server.logLines().some((line) => line.msg === 'redis unavailable: answered 503' && line.level === 40)) return true;
      await sleep(50);
      return undefined;
    });
    assert.deepEqual(server.logLines().filter((line) => (line.level as number) >= 50), [], 'nothing at error level');
  });
