/**
 * The SCIM tokens' faces on SQLite and PostgreSQL: /admin/scim-tokens/create|getall|delete (the token
 * shown once, never listed, neither it nor its hash; 404 once deleted; tenancy; validation in the admin
 * API's error body; audited as scimtoken.created/deleted by the api actor) and `latchkey scim-token
 * create|list|delete --json` (the command functions the binary runs), which the admin API sees the same.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs } from '../../src/cli/args.ts';
import type { Command } from '../../src/cli/command.ts';
import { scimTokenCreate, scimTokenDelete, scimTokenList } from '../../src/cli/commands/scim-token.ts';
import { readAllPages } from '../audit/helpers.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const TOKEN_ID = /^st_[0-9a-f]{32}$/;
const TOKEN = /^lkscim_[0-9A-Za-z]{40,}$/;
const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const NOT_FOUND = { status: 'ERROR', code: '404', message: 'The SCIM token does not exist.' };
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

const run = async (command: Command, app: App, argv: string[]) =>
  (await command.run(parseArgs([...argv, '--customer-key', app.customer.customerKey, '--json']), { app: app.composition, auditContext: SYSTEM })).json as any;

describeEachStore('SCIM tokens: admin API and CLI', (kind) => {
  test('create shows the token once (no-store); getall lists it without the token or its hash, with its last use; it authenticates', async (t) => {
    const app = await setup(t, kind);
    const createdAt = app.clock.now();
    const res = await app.admin.post('/admin/scim-tokens/create', { customerKey: app.ck, name: 'Okta' });
    const created = json(res, 200);
    assert.match(created.tokenId, TOKEN_ID);
    assert.match(created.token, TOKEN);
    assert.deepEqual(created, { status: 'SUCCESS', tokenId: created.tokenId, token: created.token });
    assert.equal(res.headers['cache-control'], 'no-store');
    const second = json(await app.admin.post('/admin/scim-tokens/create', { customerKey: String(app.ck), name: 'Entra ID' }), 200);
    assert.notEqual(second.token, created.token);

    const listRes = await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck });
    assert.deepEqual(json(listRes, 200), {
      status: 'SUCCESS',
      scimTokens: [
        { tokenId: created.tokenId, name: 'Okta', createdDttm: createdAt, lastUsedDttm: null },
        { tokenId: second.tokenId, name: 'Entra ID', createdDttm: createdAt, lastUsedDttm: null },
      ],
    });
    for (const secret of [created.token, second.token, sha256(created.token), sha256(second.token)]) assert.ok(!listRes.body.includes(secret));

    // A SCIM request carrying it: the tenant is this customer, and the listing shows when.
    app.clock.advance(90_000);
    const usedAt = app.clock.now();
    assert.equal((await app.composition.services.scimTokens.authenticate(created.token))?.customerId, app.customer.customerId);
    const listed = json(await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 200);
    assert.deepEqual(listed.scimTokens.map((s: any) => [s.name, s.lastUsedDttm]), [['Okta', usedAt], ['Entra ID', null]]);

    const rows = await app.composition.store.db.selectFrom('scim_tokens').selectAll().where('customer_id', '=', app.customer.customerId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.token_hash), [sha256(created.token), sha256(second.token)]);
    assert.ok(!JSON.stringify(rows).includes(created.token));
  });

  test('delete: the token stops authenticating, then 404; validation 400 in the error body, nothing stored', async (t) => {
    const app = await setup(t, kind);
    const rows: [Record<string, unknown>, string][] = [
      [{}, 'name is required'],
      [{ name: '' }, 'name must NOT have fewer than 1 characters'],
      [{ name: 'x'.repeat(101) }, 'name must NOT have more than 100 characters'],
      [{ name: ' Okta' }, 'name must match pattern "^\\S(.*\\S)?$"'],
      [{ name: 7 }, 'name must be string'],
    ];
    for (const [body, message] of rows) {
      assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/create', { customerKey: app.ck, ...body }), 400), validation(message), JSON.stringify(body));
    }
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck }), 400), validation('tokenId is required'));
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck, tokenId: '' }), 400),
      validation('tokenId must NOT have fewer than 1 characters'));
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', scimTokens: [] });

    const created = json(await app.admin.post('/admin/scim-tokens/create', { customerKey: app.ck, name: 'Gone' }), 200);
    // In use first, so the node keeps it: the deletion must still end it at once.
    assert.equal((await app.composition.services.scimTokens.authenticate(created.token))?.tokenId, created.tokenId);
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck, tokenId: created.tokenId }), 200),
      { status: 'SUCCESS', message: 'SCIM token deleted.' });
    assert.equal(await app.composition.services.scimTokens.authenticate(created.token), undefined);
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck, tokenId: created.tokenId }), 404), NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck, tokenId: 'st_nope' }), 404), NOT_FOUND);
    assert.deepEqual(json(await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 200), { status: 'SUCCESS', scimTokens: [] });
  });

  test("tenancy: another customer neither lists nor deletes the owner's token, and it keeps working", async (t) => {
    const app = await setup(t, kind);
    const created = json(await app.admin.post('/admin/scim-tokens/create', { customerKey: app.ck, name: 'Mine' }), 200);
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    assert.deepEqual(json(await other.admin.post('/admin/scim-tokens/getall', { customerKey: otherCk }), 200), { status: 'SUCCESS', scimTokens: [] });
    assert.deepEqual(json(await other.admin.post('/admin/scim-tokens/delete', { customerKey: otherCk, tokenId: created.tokenId }), 404), NOT_FOUND);
    // Naming the owner's customer key in the body while signing as the other customer: refused.
    assert.deepEqual(json(await other.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 401),
      { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' });
    assert.equal(json(await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 200).scimTokens.length, 1);
    assert.equal((await app.composition.services.scimTokens.authenticate(created.token))?.customerId, app.customer.customerId);
  });

  test('audit: scimtoken.created and scimtoken.deleted, by the api actor, naming the token (never the token itself)', async (t) => {
    const app = await setup(t, kind);
    const created = json(await app.admin.post('/admin/scim-tokens/create', { customerKey: app.ck, name: 'Okta' }), 200);
    const deleted = await app.admin.post('/admin/scim-tokens/delete', { customerKey: app.ck, tokenId: created.tokenId });
    json(deleted, 200);
    const events = (await readAllPages(app.admin, app.customer.customerKey, { limit: 100, action: 'scimtoken.' })).reverse();
    const target = { type: 'scimtoken', id: created.tokenId, name: 'Okta' };
    assert.deepEqual(events.map((e) => ({ action: e.action, target: e.target, actor: e.actor, ip: e.ip })), [
      { action: 'scimtoken.created', target, actor: { type: 'api', id: app.customer.customerKey }, ip: '127.0.0.1' },
      { action: 'scimtoken.deleted', target, actor: { type: 'api', id: app.customer.customerKey }, ip: '127.0.0.1' },
    ]);
    assert.equal(events[1]!.requestId, deleted.headers['x-request-id']);
    assert.ok(!JSON.stringify(events).includes(created.token) && !JSON.stringify(events).includes(sha256(created.token)));
  });

  test('CLI: create --json prints the token once; list (never the token) is what getall shows; delete, then not_found; a bad name refused with its reason', async (t) => {
    const app = await setup(t, kind);
    const created = await run(scimTokenCreate, app, ['scim-token', 'create', '--name', 'Okta']);
    assert.deepEqual(Object.keys(created).sort(), ['token', 'tokenId']);
    assert.match(created.tokenId, TOKEN_ID);
    assert.match(created.token, TOKEN);
    assert.equal((await app.composition.services.scimTokens.authenticate(created.token))?.tokenId, created.tokenId);

    const listed = await run(scimTokenList, app, ['scim-token', 'list']);
    assert.deepEqual(listed.map((s: any) => [s.tokenId, s.name]), [[created.tokenId, 'Okta']]);
    assert.ok(!JSON.stringify(listed).includes(created.token));
    assert.deepEqual(listed, json(await app.admin.post('/admin/scim-tokens/getall', { customerKey: app.ck }), 200).scimTokens);

    await assert.rejects(run(scimTokenCreate, app, ['scim-token', 'create', '--name', 'x'.repeat(101)]), { code: 'invalid', message: 'name must NOT have more than 100 characters' });
    await assert.rejects(run(scimTokenCreate, app, ['scim-token', 'create']), { message: '--name is required' });
    assert.deepEqual(await run(scimTokenDelete, app, ['scim-token', 'delete', '--token-id', created.tokenId]), { tokenId: created.tokenId, deleted: true });
    assert.deepEqual(await run(scimTokenList, app, ['scim-token', 'list']), []);
    await assert.rejects(run(scimTokenDelete, app, ['scim-token', 'delete', '--token-id', created.tokenId]), { code: 'not_found' });
  });
});
