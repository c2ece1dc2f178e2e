/**
 * Two nodes on one PostgreSQL database behind one public URL: a sign-in started on node A finishes on
 * node B (flows and sessions are in the database), and disabling the user through node A ends the
 * session on node B within the users cache's bound (2 s): the next authorization there starts at step 1.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { compose, type Composition } from '../../../src/compose/index.ts';
import { loadConfig } from '../../../src/config.ts';
import { systemClock } from '../../../src/lib/clock.ts';
import { createStore } from '../../../src/store/db.ts';
import { adminClient, testEnv } from '../../helpers/app.ts';
import { freePort } from '../../helpers/ports.ts';
import { Browser } from '../../helpers/relying-party.ts';
import { postgresSchema, postgresStore, postgresUrl } from '../../helpers/stores.ts';

const post = (browser: Browser, url: string, fields: Record<string, string>) =>
  browser.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

async function nodes(t: TestContext): Promise<{ publicUrl: string; origins: string[]; compositions: Composition[] }> {
  const schema = await postgresSchema();
  const stores = [await postgresStore(), await createStore(postgresUrl!, { schema, poolSize: 3 })];
  t.after(() => stores[1]!.close());
  const ports = [await freePort(), await freePort()];
  const publicUrl = `http://127.0.0.1:${ports[0]}`;
  const masterKey = randomBytes(32).toString('hex');
  const compositions: Composition[] = [];
  for (const [index, store] of stores.entries()) {
    const composition = await compose(loadConfig(testEnv({ LATCHKEY_PUBLIC_URL: publicUrl, LATCHKEY_MASTER_KEY: masterKey })), { store });
    const identity = await composition.buildIdentityApp();
    await identity.listen({ port: ports[index], host: '127.0.0.1' });
    t.after(async () => { await identity.close(); await composition.close(); });
    compositions.push(composition);
  }
  return { publicUrl, origins: ports.map((port) => `http://127.0.0.1:${port}`), compositions };
}

test('two nodes: a flow moves between them, and a disable on node A ends the session on node B within 2 s', { skip: !postgresUrl && 'needs LATCHKEY_TEST_POSTGRES_URL' }, async (t) => {
  const { publicUrl, origins, compositions } = await nodes(t);
  const a = compositions[0]!;
  const customer = await a.services.customers.create({ email: `owner-${randomBytes(4).toString('hex')}@example.test` });
  const adminApp = await a.buildIdentityApp();
  t.after(() => adminApp.close());
  // Signed with the time of each request, as the nodes' clocks run: one frozen Timestamp would be a
  // replay once the sign-in below outlasts the guard's grace (a slow machine takes seconds).
  const admin = adminClient(adminApp, customer, systemClock);
  const customerKey = Number(customer.customerKey);
  const returnUrl = 'http://localhost:9/return';
  const created = await admin.post('/admin/applications/create', { customerKey, name: 'Tracker', type: 'JWT', returnUrls: [returnUrl] });
  const uuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
  assert.equal((await admin.post('/admin/policies/create', { customerKey, applicationUuid: uuid, firstFactor: 'PASSWORD', secondFactor: 'NONE' })).statusCode, 200);
  const username = `ada${randomBytes(3).toString('hex')}`;
  assert.equal((await admin.post('/admin/users/create', { customerKey, username, email: `${username}@example.test`, firstName: 'Ada', lastName: 'L', password: 'correct horse battery staple' })).statusCode, 200);

  const issuer = `${publicUrl}/customers/${customer.customerKey}`;
  const authorize = `${issuer}/jwt/authorize?client_id=${uuid}&redirect_uri=${encodeURIComponent(returnUrl)}`;
  const browser = new Browser();
  const via = (index: number) => { browser.route = (url) => new URL(url.pathname + url.search, origins[index]); };

  via(0);
  const started = await browser.fetch(authorize);
  const flow = new URL(started.headers.get('location')!, publicUrl).href;
  via(1);
  assert.equal((await post(browser, flow, { username })).status, 200);
  via(0);
  const done = await post(browser, flow, { password: 'correct horse battery staple' });
  assert.equal(done.status, 303);
  via(1);
  const silent = await browser.fetch(authorize);
  assert.match(silent.headers.get('location') ?? '', /^http:\/\/localhost:9\/return\?id_token=/);

  assert.equal((await admin.post('/admin/users/disable', { customerKey, username })).statusCode, 200);
  const disabledAt = Date.now();
  let location = '';
  while (Date.now() - disabledAt < 2_000) {
    location = (await browser.fetch(authorize)).headers.get('location') ?? '';
    if (location.includes('/sign-in/')) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.match(location, /\/sign-in\/[A-Za-z0-9_-]{43}$/, `still signed in on node B ${Date.now() - disabledAt} ms after the disable`);
});
