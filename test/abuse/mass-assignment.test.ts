/**
 * Mass assignment and prototype pollution. Read-only fields (role, customerId, guid, ids,
 * markForDeletion, timestamps, secrets) sent in a create or update body are never written; JSON
 * bodies holding __proto__ or constructor.prototype keys, at any depth, are refused with 400 on
 * every JSON route of both faces, and Object.prototype stays clean.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { describeEachStore } from '../helpers/stores.ts';
import { PASSWORD, RETURN_URL, setup } from './helpers.ts';

/** What an attacker would like to set: every read-only field name the wire shows, in several spellings. */
const readOnly = (otherCustomerId: number) => ({
  role: 'ADMIN', isAdmin: true, customerId: otherCustomerId, customer_id: otherCustomerId, guid: 'attacker-guid',
  id: 1, userId: 1, markForDeletion: true, isDisabled: true, disabled: true, idpEnabled: true, emailVerified: true,
  createdAt: 1, creationDttm: '1970-01-01 00:00', lastUpdatedDttm: '1970-01-01 00:00', credentialsVersion: 99,
  secondFactorAuthType: 'NONE', passwordHash: '$2b$04$abcdefghijklmnopqrstuuJ5uCUbCdNoWm2qfbIFn0pGVr8H0x3Vm',
  applicationUuid: '00000000-0000-4000-8000-000000000000', clientId: '00000000-0000-4000-8000-000000000001',
  clientSecret: 'lkcs_attacker', policyId: 1, secret: 'JBSWY3DPEHPK3PXP',
});

/** 200 with the field ignored, or 400 naming it: either way nothing may be written. */
function acceptedOrRefused(res: LightMyRequestResponse): boolean {
  assert.ok(res.statusCode === 200 || res.statusCode === 400, `${res.statusCode} ${res.body}`);
  return res.statusCode === 200;
}

describeEachStore('abuse: mass assignment', (kind) => {
  test('users/create and users/update write none of the read-only fields', async (t) => {
    const env = await setup(t, kind);
    const other = await env.composition.services.customers.create({ email: `other-${Date.now()}@example.test` });
    const ck = Number(env.customer.customerKey);
    const base = { customerKey: ck, firstName: 'Ada', lastName: 'Lovelace', password: PASSWORD };
    assert.equal((await env.admin.post('/admin/users/create', { ...base, username: 'plain', email: 'plain@example.test' })).statusCode, 200);
    const created = await env.admin.post('/admin/users/create', { ...base, ...readOnly(other.customerId), username: 'mass', email: 'mass@example.test' });
    const get = async (username: string) => (await env.admin.post('/admin/users/get', { customerKey: ck, username })).json();
    // Everything but the name, the e-mail and what the server makes per user (ids, guid, times).
    const comparable = (record: unknown) => JSON.parse(JSON.stringify(record).replaceAll('mass', 'plain'), (key, value) =>
      (['guid', 'userId', 'creationDttm', 'lastUpdatedDttm'].includes(key) ? 'X' : value));
    if (acceptedOrRefused(created)) {
      const plain = await get('plain');
      const mass = await get('mass');
      assert.deepEqual(comparable(mass), comparable(plain), 'the user made with extra fields is like one made without');
      assert.doesNotMatch(JSON.stringify(mass), /attacker-guid|1970-01-01/);
      assert.match(JSON.stringify(mass), new RegExp(`"customerId":${env.customer.customerId}\\b`));
    }
    const before = await get('plain');
    const updated = await env.admin.post('/admin/users/update', { customerKey: ck, username: 'plain', ...readOnly(other.customerId), firstName: 'Augusta' });
    const after = await get('plain');
    const sameBut = (record: unknown) => JSON.parse(JSON.stringify(record).replaceAll('Augusta', 'Ada'), (key, value) => (key === 'lastUpdatedDttm' ? 'X' : value));
    if (acceptedOrRefused(updated)) {
      assert.match(JSON.stringify(after), /"fname":"Augusta"/);
      assert.deepEqual(sameBut(after), sameBut(before), 'only the first name changed');
    }
    else assert.deepEqual(after, before);
    // The other customer got nothing, and no row anywhere carries the attacker's values.
    const db = env.composition.store.db;
    assert.deepEqual(await db.selectFrom('users').select('id').where('customer_id', '=', other.customerId).execute(), []);
    assert.deepEqual(await db.selectFrom('users').select('id').where('guid', '=', 'attacker-guid').execute(), []);
    // The old password still opens the account (passwordHash was not taken).
    assert.equal(await env.composition.services.users.verifyCredentials(env.customer.customerId, 'plain', PASSWORD).then(Boolean, () => false), true);
  });

  test('applications, policies, OAuth clients and groups: ids, owners and secrets come from the server', async (t) => {
    const env = await setup(t, kind);
    const other = await env.composition.services.customers.create({ email: `other2-${Date.now()}@example.test` });
    const extra = readOnly(other.customerId);
    const ck = Number(env.customer.customerKey);
    const db = env.composition.store.db;

    const app = await env.admin.post('/admin/applications/create', { customerKey: ck, name: 'App', type: 'OAUTH', redirectUris: [RETURN_URL], ...extra });
    if (acceptedOrRefused(app)) {
      const body = app.json();
      assert.notEqual(body.application.applicationUuid, extra.applicationUuid);
      assert.notEqual(body.clientSecret, extra.clientSecret);
      const row = await db.selectFrom('applications').select(['customer_id', 'uuid']).where('uuid', '=', body.application.applicationUuid).executeTakeFirstOrThrow();
      assert.equal(row.customer_id, env.customer.customerId);
      const policy = await env.admin.post('/admin/policies/create', { ...extra, customerKey: ck, applicationUuid: body.application.applicationUuid, firstFactor: 'MAGIC_LINK' });
      if (acceptedOrRefused(policy)) assert.equal((await db.selectFrom('login_policies').select('customer_id').where('id', '=', policy.json().policy.policyId).executeTakeFirstOrThrow()).customer_id, env.customer.customerId);
    }
    const client = await env.admin.post('/admin/oauth-clients/create', { customerKey: ck, name: 'Client', ...extra });
    if (acceptedOrRefused(client)) {
      assert.notEqual(client.json().clientId, extra.clientId);
      assert.notEqual(client.json().clientSecret, extra.clientSecret);
    }
    const groups = await env.admin.post('/admin/groups/update', { customerKey: ck, groups: [{ name: 'staff', ...extra }], ...extra });
    acceptedOrRefused(groups);
    for (const table of ['applications', 'login_policies', 'oauth_clients'] as const) {
      assert.deepEqual(await db.selectFrom(table).select('id').where('customer_id', '=', other.customerId).execute(), [], `${table} of the other customer`);
    }
    // The other customer has its default group only.
    assert.equal((await db.selectFrom('groups').select('id').where('customer_id', '=', other.customerId).execute()).length, 1);
  });

  test('site: an API token or API key body cannot pick its id, owner, secret or creation time', async (t) => {
    const env = await setup(t, kind);
    const site = await env.site();
    await env.addUser('owner');
    const jwt = (await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'owner', password: PASSWORD } })).json().jwt_token;
    const extra = { ...readOnly(999), token: 'lkat_attacker', key: 'attacker', apiKey: 'attacker', userId: 1, user_id: 1, expires_at: 1, lastUsedAt: 1 };
    const token = await site.inject({
      method: 'POST', url: '/rest/api/2/tokens',
      headers: { authorization: `Basic ${Buffer.from(`owner:${PASSWORD}`).toString('base64')}` },
      payload: { name: 'mine', type: 'bearer', ...extra },
    });
    assert.ok([201, 400].includes(token.statusCode), token.body);
    if (token.statusCode === 201) {
      const rows = await env.composition.store.db.selectFrom('api_tokens').selectAll().execute();
      for (const row of rows) {
        assert.ok(row.created_at > 1000 && row.last_used_at !== 1 && row.id !== 1_000_000);
        assert.notEqual(row.token_hash, 'lkat_attacker');
      }
    }
    const key = await site.inject({ method: 'POST', url: '/cms-json/api/v1/api-keys', headers: { authorization: `Bearer ${jwt}` }, payload: { name: 'k', ...extra } });
    assert.ok(key.statusCode < 500, key.body);
    const keys = await env.composition.store.db.selectFrom('site_api_keys').selectAll().execute();
    for (const row of keys) assert.ok(row.created_at > 1000 && row.key_hash !== 'attacker');
  });
});

const POLLUTING_BODIES = [
  '{"__proto__":{"polluted":"yes"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}',
  '{"username":"x","groups":[{"name":"g","__proto__":{"polluted":"yes"}}]}',
  '{"a":{"b":{"constructor":{"prototype":{"polluted":"yes"}}}}}',
];

describeEachStore('abuse: prototype pollution', (kind) => {
  test('every JSON route of both faces refuses __proto__ and constructor.prototype keys with 400; Object.prototype stays clean', async (t) => {
    const env = await setup(t, kind);
    const site = await env.site();
    await env.addUser('writer', { groups: ['editors', 'site-admins'] });
    const jwt = (await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'writer', password: PASSWORD } })).json().jwt_token;
    const bodyMethods = new Set(['POST', 'PUT', 'PATCH']);
    const identityRoutes = env.identity.registeredRoutes.filter((r) => bodyMethods.has(r.method) && /^\/(moas\/)?api\//.test(r.url));
    const siteRoutes = site.registeredRoutes.filter((r) => bodyMethods.has(r.method));
    assert.ok(identityRoutes.length >= 50 && siteRoutes.length >= 5, `${identityRoutes.length} + ${siteRoutes.length} routes`);
    const concrete = (url: string) => url.replace(/:[A-Za-z]+/g, '1');
    let checked = 0;
    for (const payload of POLLUTING_BODIES) {
      for (const route of identityRoutes) {
        const res = await env.identity.inject({
          method: route.method as 'POST', url: concrete(route.url), payload,
          headers: { 'content-type': 'application/json', ...env.admin.headers() },
        });
        // Every admin route answers it as the body it is: not JSON it will read.
        assert.equal(res.statusCode, route.url.endsWith('/users/delete') ? 403 : 400, `${route.method} ${route.url}: ${res.body}`);
        if (!route.url.endsWith('/users/delete')) assert.ok(['ERROR', 'error', 'FAILED'].includes(res.json().status) || res.statusCode === 400, res.body);
        assert.doesNotMatch(res.body, /polluted|at [A-Za-z]+ \(/);
        checked++;
      }
      for (const route of siteRoutes) {
        const res = await site.inject({
          method: route.method as 'POST', url: concrete(route.url), payload,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${jwt}` },
        });
        assert.equal(res.statusCode, 400, `${route.method} ${route.url}: ${res.body}`);
        assert.equal(res.json().status, 'error');
        checked++;
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
    }
    assert.equal(checked, POLLUTING_BODIES.length * (identityRoutes.length + siteRoutes.length));
  });
});
