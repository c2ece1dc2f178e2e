/**
 * PostgreSQL unavailable (issue 17 part 3), the faces people and OAuth clients meet: the magic-link
 * landing and the console (HTML pages), POST /oauth/token and the customer's OpenID provider (the
 * OAuth JSON error, or a page for a browser). A real server reaches its database through a TCP proxy
 * that first refuses connections, then swallows them. Every answer meanwhile comes within a bound, is a
 * 503 with Retry-After in that face's own shape (never 2xx, never 500), and once the database is back
 * every route answers as before, without a restart. The recovery times are printed.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { createConsoleAccounts } from '../../src/compose/identity.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { CONNECT_TIMEOUT_MS } from '../../src/store/db.ts';
import { Browser } from '../helpers/relying-party.ts';
import {
  postgresBehindProxy, postgresUrl, sleep, startServer, until, withComposition,
} from './harness.ts';

const ANSWER_BOUND_MS = CONNECT_TIMEOUT_MS + 2_000;
const RECOVERY_BOUND_MS = 30_000;
const OWNER_PASSWORD = 'correct horse battery staple';
const UNAVAILABLE = 'The service is temporarily unavailable; retry later.';

interface Answer { status: number; type: string; retryAfter: string | null; cacheControl: string | null; text: string; ms: number }

test('PostgreSQL down: the landing, the console, /oauth/token and the OpenID provider answer 503 in their own shapes, then recover',
  { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, async (t) => {
    const { url, proxy, env } = await postgresBehindProxy(t);

    let customerKey = '';
    let ownerEmail = '';
    let basic = '';
    await withComposition({ ...env, LATCHKEY_DATABASE_URL: url }, async (app) => {
      const customer = await app.services.customers.create({ email: 'faces-owner@example.test' });
      customerKey = customer.customerKey;
      const { owners } = createConsoleAccounts({ db: app.store.db, clock: systemClock, sealer: createSealer(app.masterKey) });
      ownerEmail = (await owners.setPassword(customerKey, OWNER_PASSWORD)).email;
      const { client, clientSecret } = await app.services.oauthClients.create(customer.customerId, { name: 'faults' }, SYSTEM);
      basic = `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`;
    });
    const server = await startServer(t, env);
    const base = server.identityUrl;
    const issuer = `${base}/customers/${customerKey}`;

    // The console, signed in before the outage (a session the console must look up on every page).
    const browser = new Browser();
    const form = await (await browser.fetch(`${base}/console/sign-in`)).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form)?.[1];
    assert.ok(csrf, 'the sign-in form carries a CSRF token');
    const signedIn = await browser.fetch(`${base}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: ownerEmail, password: OWNER_PASSWORD, _csrf: csrf }).toString(),
    });
    assert.equal(signedIn.status, 303, await signedIn.text());
    assert.match(signedIn.headers.get('location') ?? '', /\/console\/account$/);

    // A token that names no link: the landing must look it up to say so (410), so it needs the database.
    const token = randomBytes(32).toString('base64url');
    const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    type Kind = 'landing GET' | 'landing POST' | 'console' | 'oauth token' | 'discovery' | 'authorization' | 'provider token';
    const kinds: Kind[] = ['landing GET', 'landing POST', 'console', 'oauth token', 'discovery', 'authorization', 'provider token'];
    const send = (kind: Kind): Promise<Response> => {
      const timeout = AbortSignal.timeout(15_000);
      switch (kind) {
        case 'landing GET': return fetch(`${base}/magic/${token}`, { headers: html, signal: timeout });
        case 'landing POST': return fetch(`${base}/magic/${token}`, { method: 'POST', headers: { ...html, 'content-type': 'application/x-www-form-urlencoded' }, body: '', signal: timeout });
        case 'console': return browser.fetch(`${base}/console/users`, { headers: html, signal: timeout });
        case 'oauth token': return fetch(`${base}/oauth/token`, {
          method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials', signal: timeout,
        });
        case 'discovery': return fetch(`${issuer}/.well-known/openid-configuration`, { signal: timeout });
        // A client never looked up before, with a redirect_uri: the exact-redirect check in front of the provider reads it first (provider.ts).
        case 'authorization': return fetch(`${issuer}/auth?client_id=${randomUUID()}&response_type=code&scope=openid&redirect_uri=https%3A%2F%2Frp.example.test%2Fcb`, { headers: html, redirect: 'manual', signal: timeout });
        case 'provider token': return fetch(`${issuer}/token`, {
          method: 'POST', headers: { authorization: 'Basic eDp5', 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=authorization_code&code=x', signal: timeout,
        });
      }
    };
    const ask = async (kind: Kind): Promise<Answer> => {
      const started = performance.now();
      const response = await send(kind);
      return {
        status: response.status,
        type: response.headers.get('content-type') ?? '',
        retryAfter: response.headers.get('retry-after'),
        cacheControl: response.headers.get('cache-control'),
        text: await response.text(),
        ms: performance.now() - started,
      };
    };
    // What each route answers with the database up (the unknown link: 410; the unknown client: 4xx).
    const healthy: Record<Kind, number> = {
      'landing GET': 410, 'landing POST': 410, console: 200, 'oauth token': 200, discovery: 200, authorization: 400, 'provider token': 401,
    };
    for (const kind of kinds) assert.equal((await ask(kind)).status, healthy[kind], `${kind} before the outage`);

    /** The 503 in each face's own shape. */
    const check = (kind: Kind, answer: Answer) => {
      const where = `${kind} during the outage: ${JSON.stringify(answer)}`;
      assert.ok(answer.ms < ANSWER_BOUND_MS, `${where}: answered after ${Math.round(answer.ms)} ms`);
      assert.equal(answer.status, 503, where);
      assert.equal(answer.retryAfter, '5', where);
      assert.match(answer.cacheControl ?? '', /no-store/, where);
      switch (kind) {
        case 'landing GET':
        case 'landing POST':
          assert.match(answer.type, /^text\/html/, where);
          assert.match(answer.text, /<h1>Sign-in is unavailable right now<\/h1>/, where);
          assert.match(answer.text, /role="alert"/, where);
          break;
        case 'console':
          assert.match(answer.type, /^text\/html/, where);
          assert.match(answer.text, /<title>Temporarily unavailable · Latchkey console<\/title>/, where);
          assert.match(answer.text, /<h1>Temporarily unavailable<\/h1>/, where);
          break;
        case 'authorization':
          assert.match(answer.type, /^text\/html/, where);
          assert.match(answer.text, /<h1>Sign-in is unavailable right now<\/h1>/, where);
          break;
        default:
          assert.match(answer.type, /^application\/json/, where);
          assert.deepEqual(JSON.parse(answer.text), { error: 'temporarily_unavailable', error_description: UNAVAILABLE }, where);
      }
    };

    let tried = 0;
    for (const phase of ['refuse', 'blackhole'] as const) {
      await proxy[phase]();
      // Every route at once, twice: the first may meet a pool connection cut just now, the second a new connection attempt.
      for (let round = 0; round < 2; round++) {
        await Promise.all(kinds.map(async (kind) => { check(kind, await ask(kind)); tried++; }));
      }
    }

    await proxy.forward();
    const back = performance.now();
    const recovered: Record<string, number> = {};
    await Promise.all(kinds.map(async (kind) => {
      await until(`${kind} to answer as before`, RECOVERY_BOUND_MS, async () => {
        const answer = await ask(kind);
        if (answer.status === healthy[kind]) return true;
        assert.equal(answer.status, 503, `${kind} while recovering: ${answer.text}`);
        await sleep(100);
        return undefined;
      });
      recovered[kind] = Math.round(performance.now() - back);
    }));
    t.diagnostic(`recovery after the database returned (ms to the usual answer): ${JSON.stringify(recovered)}; ${tried} answers during the outage, all 503`);
    for (const [kind, ms] of Object.entries(recovered)) assert.ok(ms < RECOVERY_BOUND_MS, `${kind} recovered after ${ms} ms`);
    assert.equal(server.child.exitCode, null, 'the same process served before, during and after');

    // Logged as an outage (warn, naming the database, no stack), never as an unexpected error.
    const lines = server.logLines();
    const outage = lines.filter((line) => line.msg === 'database unavailable: answered 503');
    assert.ok(outage.length > 0, 'the refusals are logged');
    for (const line of outage) {
      assert.equal(line.level, 40, JSON.stringify(line));
      assert.ok(!('err' in line) && !JSON.stringify(line).includes('"stack"'), `no stack: ${JSON.stringify(line)}`);
    }
    assert.deepEqual(lines.filter((line) => (line.level as number) >= 50), [], 'nothing at error level');
  });
