/**
 * Black-box suite of /admin/applications/create|getall|delete (DESIGN: Admin API extension) through
 * the signed client, on SQLite and PostgreSQL: whole bodies, the OAUTH secret shown once and never
 * stored in clear, validation rows, 404s, tenancy, /moas/api, and delete taking the policies along.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { build, type AdminClient, type TestApp } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;
const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const NOT_FOUND = { status: 'ERROR', code: '404', message: 'The application does not exist.' };
const DENIED = { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' };

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

const JWT_BODY = { name: 'Portal', type: 'JWT', returnUrls: ['https://portal.example.com/callback'] };
const OAUTH_BODY = {
  name: 'Wiki', type: 'OAUTH',
  redirectUris: ['https://wiki.example.com/oidc/callback', 'http://localhost:3000/cb'],
  loginUrls: ['https://wiki.example.com/login'],
};

async function createApp(admin: AdminClient, ck: number | string, body: Record<string, unknown>) {
  return json(await admin.post('/admin/applications/create', { customerKey: ck, ...body }), 200);
}

const wire = (uuid: string, body: Record<string, unknown>) => ({
  applicationUuid: uuid, name: body.name, type: body.type,
  returnUrls: body.returnUrls ?? [], redirectUris: body.redirectUris ?? [], loginUrls: body.loginUrls ?? [],
  // OAUTH only, always listed there.
  ...(body.type === 'OAUTH' ? { postLogoutRedirectUris: body.postLogoutRedirectUris ?? [] } : {}),
});

describeEachStore('applications API', (kind) => {
  test('create JWT, OAUTH and SAML applications: whole bodies; the client secret only for OAUTH, only on create', async (t) => {
    const app = await setup(t, kind);
    const jwtRes = await app.admin.post('/admin/applications/create', { customerKey: app.ck, ...JWT_BODY });
    const jwt = json(jwtRes, 200);
    assert.match(jwt.application.applicationUuid, UUID_V4);
    assert.deepEqual(jwt, { status: 'SUCCESS', application: wire(jwt.application.applicationUuid, JWT_BODY) });

    const oauthRes = await app.admin.post('/admin/applications/create', { customerKey: String(app.ck), ...OAUTH_BODY });
    const oauth = json(oauthRes, 200);
    assert.match(oauth.application.applicationUuid, UUID_V4);
    assert.match(oauth.clientSecret, SECRET);
    assert.deepEqual(oauth, { status: 'SUCCESS', application: wire(oauth.application.applicationUuid, OAUTH_BODY), clientSecret: oauth.clientSecret });
    assert.equal(oauthRes.headers['cache-control'], 'no-store');

    const samlBody = { name: 'Legacy', type: 'SAML', entityId: 'https://legacy.example.com/saml', acsUrls: ['https://legacy.example.com/acs'] };
    const saml = await createApp(app.admin, app.ck, samlBody);
    assert.deepEqual(saml, { status: 'SUCCESS', application: {
      ...wire(saml.application.applicationUuid, samlBody),
      entityId: samlBody.entityId, acsUrls: samlBody.acsUrls, nameIdFormat: 'emailAddress', sloUrl: '', spCertificate: '',
    } });

    const listRes = await app.admin.post('/admin/applications/getall', { customerKey: app.ck });
    const listed = json(listRes, 200);
    assert.deepEqual(listed, { status: 'SUCCESS', applications: [jwt.application, oauth.application, saml.application] });
    assert.ok(!listRes.body.includes(oauth.clientSecret));

    // Stored: the salt and the SHA-256 of the secret, never the secret itself.
    const rows = await app.composition.store.db.selectFrom('applications').selectAll().orderBy('id').execute();
    const oauthRow = rows.find((r) => r.uuid === oauth.application.applicationUuid)!;
    assert.equal(oauthRow.client_secret_hash, createHash('sha256').update(oauth.clientSecret).digest('hex'));
    assert.match(String(oauthRow.client_secret_salt), /^[A-Za-z0-9_-]{22}$/);
    assert.ok(!JSON.stringify(rows).includes(oauth.clientSecret));
    const jwtRow = rows.find((r) => r.uuid === jwt.application.applicationUuid)!;
    assert.equal(jwtRow.client_secret_hash, null);
    assert.equal(jwtRow.client_secret_salt, null);

    // The OpenID provider recomputes the same secret from the master key and the salt.
    const service = app.composition.services.applications;
    const found = await service.findByUuid(app.composition.store.db, app.customer.customerId, oauth.application.applicationUuid);
    assert.equal(service.applicationClientSecret(found!), oauth.clientSecret);
    const foundJwt = await service.findByUuid(app.composition.store.db, app.customer.customerId, jwt.application.applicationUuid);
    assert.equal(service.applicationClientSecret(foundJwt!), undefined);
  });

  test('postLogoutRedirectUris: taken by create (0..20 URLs), listed by getall, kept by the console\'s update', async (t) => {
    const app = await setup(t, kind);
    const body = { ...OAUTH_BODY, postLogoutRedirectUris: ['https://wiki.example.com/signed-out', 'http://localhost:3000/bye', 'https://wiki.example.com/signed-out'] };
    const created = await createApp(app.admin, app.ck, body);
    assert.deepEqual(created.application.postLogoutRedirectUris, ['https://wiki.example.com/signed-out', 'http://localhost:3000/bye']);
    const plain = await createApp(app.admin, app.ck, OAUTH_BODY);
    assert.deepEqual(plain.application.postLogoutRedirectUris, []);
    const listed = json(await app.admin.post('/admin/applications/getall', { customerKey: app.ck }), 200);
    assert.deepEqual(listed.applications, [created.application, plain.application]);
    const service = app.composition.services.applications;
    const updated = await service.update(app.customer.customerId, plain.application.applicationUuid, {
      name: 'Wiki', redirectUris: OAUTH_BODY.redirectUris, postLogoutRedirectUris: ['https://wiki.example.com/bye'],
    }, SYSTEM);
    assert.deepEqual(updated.postLogoutRedirectUris, ['https://wiki.example.com/bye']);
    await assert.rejects(service.update(app.customer.customerId, plain.application.applicationUuid, {
      name: 'Wiki', redirectUris: OAUTH_BODY.redirectUris, postLogoutRedirectUris: ['https://wiki.example.com/bye#x'],
    }, SYSTEM), { message: 'postLogoutRedirectUris[0] must not contain a fragment (#)' });
  });

  test('two OAUTH applications get different secrets; duplicate URLs are stored once', async (t) => {
    const app = await setup(t, kind);
    const a = await createApp(app.admin, app.ck, OAUTH_BODY);
    const b = await createApp(app.admin, app.ck, { ...OAUTH_BODY, redirectUris: ['https://x.example/cb', 'https://x.example/cb'] });
    assert.notEqual(a.clientSecret, b.clientSecret);
    assert.deepEqual(b.application.redirectUris, ['https://x.example/cb']);
  });

  test('validation: 400 in the standard shape naming the field', async (t) => {
    const app = await setup(t, kind);
    const long = `https://example.com/${'a'.repeat(2048 - 20 + 1)}`;
    const rows: [Record<string, unknown>, string][] = [
      [{ type: 'JWT', returnUrls: ['https://a.example'] }, 'name is required'],
      [{ name: 'A', returnUrls: ['https://a.example'] }, 'type is required'],
      [{ name: '', type: 'SAML' }, 'name must NOT have fewer than 1 characters'],
      [{ name: 'x'.repeat(101), type: 'SAML' }, 'name must NOT have more than 100 characters'],
      [{ name: 'A', type: 'OIDC' }, 'type must be equal to one of the allowed values'],
      [{ name: 'A', type: 'JWT' }, 'returnUrls must hold at least one URL for JWT applications'],
      [{ name: 'A', type: 'JWT', returnUrls: [] }, 'returnUrls must hold at least one URL for JWT applications'],
      [{ name: 'A', type: 'OAUTH', loginUrls: ['https://a.example/login'] }, 'redirectUris must hold at least one URL for OAUTH applications'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example'], redirectUris: ['https://a.example/cb'] }, 'redirectUris is only for OAUTH applications'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], returnUrls: ['https://a.example'] }, 'returnUrls is only for JWT applications'],
      [{ name: 'A', type: 'SAML', loginUrls: ['https://a.example'] }, 'loginUrls is only for OAUTH applications'],
      [{ name: 'A', type: 'JWT', returnUrls: 'https://a.example' }, 'returnUrls must be array'],
      [{ name: 'A', type: 'JWT', returnUrls: [42] }, 'returnUrls.0 must be string'],
      [{ name: 'A', type: 'JWT', returnUrls: Array.from({ length: 21 }, (_, i) => `https://a.example/${i}`) }, 'returnUrls must NOT have more than 20 items'],
      [{ name: 'A', type: 'JWT', returnUrls: [long] }, 'returnUrls.0 must NOT have more than 2048 characters'],
      [{ name: 'A', type: 'JWT', returnUrls: ['ftp://a.example'] }, 'returnUrls[0] must start with https:// or http://'],
      [{ name: 'A', type: 'JWT', returnUrls: ['/relative'] }, 'returnUrls[0] must start with https:// or http://'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example', 'javascript:alert(1)'] }, 'returnUrls[1] must start with https:// or http://'],
      [{ name: 'A', type: 'JWT', returnUrls: [''] }, 'returnUrls[0] must not be empty'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example/a b'] }, 'returnUrls[0] must not contain whitespace, semicolons or commas'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example/a;b'] }, 'returnUrls[0] must not contain whitespace, semicolons or commas'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/a,b'] }, 'redirectUris[0] must not contain whitespace, semicolons or commas'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], loginUrls: ['https://'] }, 'loginUrls[0] must be an absolute URL'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://user:pw@a.example/'] }, 'returnUrls[0] must not contain user information'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example/#frag'] }, 'returnUrls[0] must not contain a fragment (#)'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example'], postLogoutRedirectUris: ['https://a.example/bye'] }, 'postLogoutRedirectUris is only for OAUTH applications'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], postLogoutRedirectUris: ['https://a.example/bye', 'ftp://a.example'] },
        'postLogoutRedirectUris[1] must start with https:// or http://'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], postLogoutRedirectUris: ['https://a.example/bye#x'] },
        'postLogoutRedirectUris[0] must not contain a fragment (#)'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], postLogoutRedirectUris: Array.from({ length: 21 }, (_, i) => `https://a.example/${i}`) },
        'postLogoutRedirectUris must NOT have more than 20 items'],
    ];
    for (const [body, message] of rows) {
      const res = await app.admin.post('/admin/applications/create', { customerKey: app.ck, ...body });
      assert.deepEqual(json(res, 400), validation(message), JSON.stringify(body));
    }
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck }), 400), validation('applicationUuid is required'));
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: 'nope' }), 400),
      validation('applicationUuid must be a UUID'));
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: 7 }), 400),
      validation('applicationUuid must be string'));
    assert.deepEqual(json(await app.admin.post('/admin/applications/getall', {}), 400), validation('customerKey is required'));
    // Nothing was created by any of them.
    assert.deepEqual(json(await app.admin.post('/admin/applications/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', applications: [] });
  });

  test('delete: success body, then 404; the application\'s policies go with it; an upper-case UUID names it too', async (t) => {
    const app = await setup(t, kind);
    const keep = await createApp(app.admin, app.ck, JWT_BODY);
    const gone = await createApp(app.admin, app.ck, OAUTH_BODY);
    for (const [uuid, groupName] of [[gone.application.applicationUuid, undefined], [gone.application.applicationUuid, 'Staff'], [keep.application.applicationUuid, undefined]] as const) {
      json(await app.admin.post('/admin/policies/create', { customerKey: app.ck, applicationUuid: uuid, firstFactor: 'MAGIC_LINK', groupName }), 200);
    }
    const uuid = gone.application.applicationUuid;
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: uuid.toUpperCase() }), 200),
      { status: 'SUCCESS', message: 'Application deleted.' });
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: uuid }), 404), NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/applications/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', applications: [keep.application] });
    const policies = await app.composition.store.db.selectFrom('login_policies').select(['application_id'])
      .where('customer_id', '=', app.customer.customerId).execute();
    assert.equal(policies.length, 1);
    const listed = json(await app.admin.post('/admin/policies/getall', { customerKey: app.ck }), 200);
    assert.deepEqual(listed.policies.map((p: { applicationUuid: string }) => p.applicationUuid), [keep.application.applicationUuid]);
    assert.deepEqual(json(await app.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: '00000000-0000-4000-8000-000000000000' }), 404), NOT_FOUND);
  });

  test('tenancy: another customer neither sees nor deletes the application; its own list is its own', async (t) => {
    const app = await setup(t, kind);
    const mine = await createApp(app.admin, app.ck, JWT_BODY);
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    assert.deepEqual(json(await other.admin.post('/admin/applications/getall', { customerKey: otherCk }), 200), { status: 'SUCCESS', applications: [] });
    assert.deepEqual(json(await other.admin.post('/admin/applications/delete', { customerKey: otherCk, applicationUuid: mine.application.applicationUuid }), 404), NOT_FOUND);
    // The body's customerKey naming the owner while another customer signs: refused as unauthorised.
    assert.deepEqual(json(await other.admin.post('/admin/applications/delete', { customerKey: app.ck, applicationUuid: mine.application.applicationUuid }), 401), DENIED);
    assert.deepEqual(json(await app.admin.post('/admin/applications/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', applications: [mine.application] });
  });

  test('signature: a wrong digest is 401 in the standard shape on every route', async (t) => {
    const app = await setup(t, kind);
    for (const route of ['create', 'getall', 'delete']) {
      const res = await app.admin.post(`/admin/applications/${route}`, { customerKey: app.ck, ...JWT_BODY }, { headers: { authorization: 'a'.repeat(128) } });
      assert.deepEqual(json(res, 401), DENIED);
    }
  });

  test('/moas/api serves the same routes', async (t) => {
    const app = await setup(t, kind);
    const post = (route: string, body: Record<string, unknown>) => app.identity.inject({
      method: 'POST', url: `/moas/api/admin/applications/${route}`,
      headers: { 'content-type': 'application/json', ...app.admin.headers() },
      payload: JSON.stringify({ customerKey: app.ck, ...body }),
    });
    const created = json(await post('create', OAUTH_BODY), 200);
    assert.deepEqual(created, { status: 'SUCCESS', application: wire(created.application.applicationUuid, OAUTH_BODY), clientSecret: created.clientSecret });
    assert.deepEqual(json(await post('getall', {}), 200), { status: 'SUCCESS', applications: [created.application] });
    assert.deepEqual(json(await post('delete', { applicationUuid: created.application.applicationUuid }), 200), { status: 'SUCCESS', message: 'Application deleted.' });
  });
});

test('the OpenAPI document lists the three application routes with their error responses', async (t) => {
  const app = await setup(t, 'sqlite');
  const doc = (await app.identity.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  for (const route of ['create', 'getall', 'delete']) {
    const op = doc.paths[`/api/admin/applications/${route}`]?.post;
    assert.ok(op, route);
    assert.ok(op.requestBody, route);
    for (const status of ['200', '400', '401']) assert.ok(op.responses[status]?.content, `${route} ${status}`);
  }
  assert.ok(doc.paths['/api/admin/applications/delete'].post.responses['404'].content);
});
