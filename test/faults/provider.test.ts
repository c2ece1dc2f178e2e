/**
 * The third-party provider slow or down (issue 17 part 3), through the real server process with the
 * LATCHKEY_SITE_PROVIDER_* settings and a real OpenID provider (test/helpers/oidc-provider.ts):
 * - slow (a provider that accepts and never answers): the request is refused within
 *   LATCHKEY_SITE_PROVIDER_TIMEOUT_MS, never held;
 * - down: fail closed with the site table's provider-token error, 400 INVALID_TOKEN (the site cannot
 *   tell the token is good; 503 is kept for the site's own database), and a token checked before the
 *   outage is served from the cache only within LATCHKEY_SITE_PROVIDER_CACHE_SECONDS of its check.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { closeServer, listen, SITE_CLIENT, startProvider } from '../helpers/oidc-provider.ts';
import { freshDatabase, serverEnv, sleep, startServer, withComposition } from './harness.ts';

const POSTS = '/cms-json/cms/v2/posts';
const TIMEOUT_MS = 500;
const CACHE_SECONDS = 2;

async function siteWithProvider(t: Parameters<typeof startServer>[0], issuer: string) {
  const { url, dir } = await freshDatabase(t, 'sqlite');
  const env = await serverEnv(url, dir, {
    LATCHKEY_SITE_PROVIDER_ISSUER: issuer,
    LATCHKEY_SITE_PROVIDER_CLIENT_ID: SITE_CLIENT.id,
    LATCHKEY_SITE_PROVIDER_CLIENT_SECRET: SITE_CLIENT.secret,
    LATCHKEY_SITE_PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS),
    LATCHKEY_SITE_PROVIDER_CACHE_SECONDS: String(CACHE_SECONDS),
  });
  const customerKey = await withComposition(env, async (app) => {
    const customer = await app.services.customers.create({ email: 'faults-owner@example.test' });
    await app.services.users.create(customer.customerId, { username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L', customAttributes: {} }, SYSTEM);
    return customer.customerKey;
  });
  const server = await startServer(t, { ...env, LATCHKEY_SITE_CUSTOMER_KEY: customerKey });
  return (token: string) => fetch(`${server.siteUrl}${POSTS}`, { headers: { access_token: token }, signal: AbortSignal.timeout(15_000) });
}

const invalidToken = (description: string) => ({ status: 'error', error: 'INVALID_TOKEN', code: '400', error_description: description });

test('a provider that never answers: refused within the provider timeout, fail closed', async (t) => {
  const held = new Set<IncomingMessage>();
  const stalled = createServer((request) => { held.add(request); });
  const issuer = await listen(stalled);
  t.after(() => closeServer(stalled));
  const get = await siteWithProvider(t, issuer);
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const response = await get('any-access-token');
    const elapsed = performance.now() - started;
    assert.deepEqual([response.status, await response.json()], [400, invalidToken('provider discovery did not answer in time')]);
    // The bound is the setting plus the rest of the request's work, far under the client's 15 s.
    assert.ok(elapsed < TIMEOUT_MS + 2_500, `answered after ${Math.round(elapsed)} ms`);
  }
  assert.ok(held.size >= 3, 'each request did ask the provider');
});

test('the provider goes down: a checked token is served from the cache only within its bound, then refused (INVALID_TOKEN)', async (t) => {
  const op = await startProvider();
  let opOpen = true;
  t.after(() => (opOpen ? op.close() : undefined));
  const get = await siteWithProvider(t, op.issuer);
  const { access_token: token } = await op.signIn('alice');

  const first = await get(token);
  assert.equal(first.status, 200, await first.text());
  // The check (and so the cache entry) happened before this moment.
  const checkedBy = performance.now();
  await op.close();
  opOpen = false;

  // Until the refusal: every 200 must have been asked within the cache bound of the check.
  const servedAfterDown: number[] = [];
  for (;;) {
    const asked = performance.now();
    const response = await get(token);
    const body = await response.json();
    if (response.status === 200) {
      servedAfterDown.push(Math.round(asked - checkedBy));
      assert.ok(asked - checkedBy < CACHE_SECONDS * 1000, `served from the cache ${Math.round(asked - checkedBy)} ms after the check`);
      await sleep(100);
      continue;
    }
    assert.deepEqual([response.status, body], [400, invalidToken('provider introspection could not be reached')]);
    t.diagnostic(`served from the cache at ${JSON.stringify(servedAfterDown)} ms after the check; refused at ${Math.round(asked - checkedBy)} ms`);
    break;
  }
  // And stays refused.
  const again = await get(token);
  assert.deepEqual([again.status, await again.json()], [400, invalidToken('provider introspection could not be reached')]);
});
