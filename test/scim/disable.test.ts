/**
 * SCIM's active:false is the admin API's disable with every consequence: the user's JWTs, API keys,
 * API tokens and SSO sessions stop at once on the node that took the request, and on a second node
 * on the same store within the read cache's bound (store/read-cache.ts, moved by the test clock, not
 * slept). Enabling again brings back the keys and tokens but not the JWTs or sessions. Both stores.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createStore } from '../../src/store/db.ts';
import { DEFAULT_MAX_AGE_MS } from '../../src/store/read-cache.ts';
import { testEnv } from '../helpers/app.ts';
import { describeEachStore, postgresSchema, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { buildScim, PATCH_SCHEMA, PUBLIC_URL, USER_SCHEMA, type ScimApp } from './helpers.ts';

const PASSWORD = 'violet-otter-harbour-42';
const POSTS = '/cms-json/cms/v2/posts';

interface Node { composition: Composition; site: FastifyInstance }

/** A second node: its own composition (and, on PostgreSQL, its own connections) on node A's store. */
async function secondNode(t: TestContext, app: ScimApp, kind: StoreKind, masterKey: string): Promise<Node> {
  const store = kind === 'postgres'
    ? await createStore(postgresUrl!, { schema: await postgresSchema(), poolSize: 2 })
    : app.composition.store;
  const composition = await compose(loadConfig(testEnv({ LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_MASTER_KEY: masterKey })), { clock: app.clock, store });
  const site = await composition.buildSiteApp({ customerKey: app.customer.customerKey });
  t.after(async () => {
    await site.close();
    await composition.close();
    if (kind === 'postgres') await store.close();
  });
  return { composition, site };
}

describeEachStore('SCIM: active:false stops every credential', (kind) => {
  test('JWTs, API keys, API tokens and SSO sessions stop at once here and on the other node; enabling brings back keys and tokens only', async (t) => {
    const masterKey = randomBytes(32).toString('hex');
    const app = await buildScim(t, kind, { LATCHKEY_MASTER_KEY: masterKey });
    const nodeA: Node = { composition: app.composition, site: await app.composition.buildSiteApp({ customerKey: app.customer.customerKey }) };
    t.after(() => nodeA.site.close());
    const nodeB = await secondNode(t, app, kind, masterKey);
    const customerId = app.customer.customerId;

    const created = await app.scim.request('POST', '/Users', {
      schemas: [USER_SCHEMA], userName: 'ada', name: { givenName: 'Ada', familyName: 'Lovelace' }, emails: [{ value: 'ada@example.com', primary: true }], password: PASSWORD,
    });
    assert.equal(created.statusCode, 201, created.body);
    const scimId = created.json().id as string;
    const user = (await app.composition.services.users.findByLogin(customerId, 'ada'))!;

    // Each credential, obtained through node B.
    const token = await nodeB.site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'ada', password: PASSWORD } });
    assert.equal(token.statusCode, 200, token.body);
    const jwt = token.json().jwt_token as string;
    const apiKey = (await nodeB.composition.services.siteApiKeys.create(customerId, { login: 'ada' }, SYSTEM)).apiKey;
    const apiToken = (await nodeB.composition.services.apiTokens.create(customerId, { userId: user.id, name: 'ci', type: 'bearer', expiresInDays: 30 }, SYSTEM)).secret;
    const session = await nodeB.composition.services.ssoSessions.open(customerId, user.id, ['pwd'], { userAgent: 'test', address: '127.0.0.1' });

    /** Which credentials a node still honours. */
    const honoured = async (node: Node) => {
      const get = (url: string, secret: string) => node.site.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secret}` } });
      return {
        jwt: (await get(POSTS, jwt)).statusCode === 200,
        apiKey: (await get(POSTS, apiKey)).statusCode === 200,
        apiToken: (await get('/rest/api/2/myself', apiToken)).statusCode === 200,
        session: (await node.composition.services.ssoSessions.current(customerId, session.value)) !== undefined,
      };
    };
    const all = { jwt: true, apiKey: true, apiToken: true, session: true };
    const none = { jwt: false, apiKey: false, apiToken: false, session: false };
    assert.deepEqual(await honoured(nodeA), all);
    assert.deepEqual(await honoured(nodeB), all);

    const patch = (active: unknown) => app.scim.request('PATCH', `/Users/${scimId}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'Replace', path: 'active', value: active }] });
    const disabled = await patch('False');
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal(disabled.json().active, false);
    assert.deepEqual(await honoured(nodeA), none, 'at once on the node that took the request');
    // Node B's kept answers are trusted for at most DEFAULT_MAX_AGE_MS, whatever its change feed says.
    app.clock.advance(DEFAULT_MAX_AGE_MS + 1);
    assert.deepEqual(await honoured(nodeB), none, 'on the other node within the read cache\'s bound');

    const enabled = await patch(true);
    assert.equal(enabled.json().active, true);
    app.clock.advance(DEFAULT_MAX_AGE_MS + 1);
    const back = { jwt: false, apiKey: true, apiToken: true, session: false };
    assert.deepEqual(await honoured(nodeA), back, 'a disable retires JWTs and sessions for good');
    assert.deepEqual(await honoured(nodeB), back);
  });
});
