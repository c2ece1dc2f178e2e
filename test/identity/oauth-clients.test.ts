/**
 * Black-box suite of /admin/oauth-clients/create|getall|delete (DESIGN: Admin API extension) on SQLite
 * and PostgreSQL: the secret shown once and stored as SHA-256 only, verifyClientSecret for the token
 * endpoint, validation, 404 and tenancy.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { build, type TestApp } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CLIENT_SECRET = /^lkcs_[0-9A-Za-z]{43,}$/;
const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const NOT_FOUND = { status: 'ERROR', code: '404', message: 'The OAuth client does not exist.' };

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

describeEachStore('OAuth clients API', (kind) => {
  test('create shows the secret once; getall lists without it; the database holds only its SHA-256', async (t) => {
    const app = await setup(t, kind);
    const res = await app.admin.post('/admin/oauth-clients/create', { customerKey: app.ck, name: 'Provisioning' });
    const created = json(res, 200);
    assert.match(created.clientId, UUID_V4);
    assert.match(created.clientSecret, CLIENT_SECRET);
    assert.deepEqual(created, { status: 'SUCCESS', clientId: created.clientId, clientSecret: created.clientSecret });
    assert.equal(res.headers['cache-control'], 'no-store');
    const second = json(await app.admin.post('/admin/oauth-clients/create', { customerKey: String(app.ck), name: 'CI' }), 200);
    assert.notEqual(second.clientSecret, created.clientSecret);

    const listRes = await app.admin.post('/admin/oauth-clients/getall', { customerKey: app.ck });
    const listed = json(listRes, 200);
    const now = app.clock.now();
    assert.deepEqual(listed, {
      status: 'SUCCESS',
      oauthClients: [{ clientId: created.clientId, name: 'Provisioning', createdAt: now }, { clientId: second.clientId, name: 'CI', createdAt: now }],
    });
    assert.ok(!listRes.body.includes(created.clientSecret));

    const rows = await app.composition.store.db.selectFrom('oauth_clients').selectAll().where('customer_id', '=', app.customer.customerId).orderBy('id').execute();
    assert.equal(rows[0].secret_hash, createHash('sha256').update(created.clientSecret).digest('hex'));
    assert.ok(!JSON.stringify(rows).includes(created.clientSecret));
  });

  test('verifyClientSecret: the customer id for the right secret, undefined otherwise and after delete', async (t) => {
    const app = await setup(t, kind);
    const { oauthClients } = app.composition.services;
    const created = json(await app.admin.post('/admin/oauth-clients/create', { customerKey: app.ck, name: 'Provisioning' }), 200);
    const other = await app.newCustomer();
    const theirs = json(await other.admin.post('/admin/oauth-clients/create', { customerKey: Number(other.customer.customerKey), name: 'Theirs' }), 200);

    assert.equal(await oauthClients.verifyClientSecret(created.clientId, created.clientSecret), app.customer.customerId);
    assert.equal(await oauthClients.verifyClientSecret(theirs.clientId, theirs.clientSecret), other.customer.customerId);
    assert.equal(await oauthClients.verifyClientSecret(created.clientId, theirs.clientSecret), undefined);
    assert.equal(await oauthClients.verifyClientSecret(theirs.clientId, created.clientSecret), undefined);
    // Another last character: a fixed one would be the real one once in 62 runs.
    const wrongLast = created.clientSecret.endsWith('x') ? 'y' : 'x';
    assert.equal(await oauthClients.verifyClientSecret(created.clientId, `${created.clientSecret.slice(0, -1)}${wrongLast}`), undefined);
    assert.equal(await oauthClients.verifyClientSecret(created.clientId, ''), undefined);
    assert.equal(await oauthClients.verifyClientSecret('00000000-0000-4000-8000-000000000000', created.clientSecret), undefined);

    json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck, clientId: created.clientId }), 200);
    assert.equal(await oauthClients.verifyClientSecret(created.clientId, created.clientSecret), undefined);
  });

  test('validation 400 naming the field; delete then 404', async (t) => {
    const app = await setup(t, kind);
    const rows: [Record<string, unknown>, string][] = [
      [{}, 'name is required'],
      [{ name: '' }, 'name must NOT have fewer than 1 characters'],
      [{ name: 'x'.repeat(101) }, 'name must NOT have more than 100 characters'],
      [{ name: 3 }, 'name must be string'],
    ];
    for (const [body, message] of rows) {
      assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/create', { customerKey: app.ck, ...body }), 400), validation(message), JSON.stringify(body));
    }
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck }), 400), validation('clientId is required'));
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck, clientId: '' }), 400),
      validation('clientId must NOT have fewer than 1 characters'));
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', oauthClients: [] });

    const created = json(await app.admin.post('/admin/oauth-clients/create', { customerKey: app.ck, name: 'Gone' }), 200);
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck, clientId: created.clientId }), 200),
      { status: 'SUCCESS', message: 'OAuth client deleted.' });
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck, clientId: created.clientId }), 404), NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/delete', { customerKey: app.ck, clientId: 'nope' }), 404), NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/oauth-clients/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', oauthClients: [] });
  });

  test('tenancy: another customer neither lists nor deletes the owner\'s client', async (t) => {
    const app = await setup(t, kind);
    const created = json(await app.admin.post('/admin/oauth-clients/create', { customerKey: app.ck, name: 'Mine' }), 200);
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    assert.deepEqual(json(await other.admin.post('/admin/oauth-clients/getall', { customerKey: otherCk }), 200), { status: 'SUCCESS', oauthClients: [] });
    assert.deepEqual(json(await other.admin.post('/admin/oauth-clients/delete', { customerKey: otherCk, clientId: created.clientId }), 404), NOT_FOUND);
    assert.equal(json(await app.admin.post('/admin/oauth-clients/getall', { customerKey: app.ck }), 200).oauthClients.length, 1);
    assert.equal(await app.composition.services.oauthClients.verifyClientSecret(created.clientId, created.clientSecret), app.customer.customerId);
  });

  test('/moas/api serves the same routes', async (t) => {
    const app = await setup(t, kind);
    const post = (route: string, body: Record<string, unknown>) => app.identity.inject({
      method: 'POST', url: `/moas/api/admin/oauth-clients/${route}`,
      headers: { 'content-type': 'application/json', ...app.admin.headers() },
      payload: JSON.stringify({ customerKey: app.ck, ...body }),
    });
    const created = json(await post('create', { name: 'Moas' }), 200);
    assert.deepEqual(created, { status: 'SUCCESS', clientId: created.clientId, clientSecret: created.clientSecret });
    assert.deepEqual(json(await post('getall', {}), 200),
      { status: 'SUCCESS', oauthClients: [{ clientId: created.clientId, name: 'Moas', createdAt: app.clock.now() }] });
    assert.deepEqual(json(await post('delete', { clientId: created.clientId }), 200), { status: 'SUCCESS', message: 'OAuth client deleted.' });
  });
});
