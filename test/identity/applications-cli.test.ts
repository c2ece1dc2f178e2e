/**
 * `latchkey app|policy|oauth-client create|list|delete` with --json: in process on both stores (the
 * commands call the same services as the routes), and as a child process on a SQLite file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs, UsageError } from '../../src/cli/args.ts';
import type { Command } from '../../src/cli/command.ts';
import { appCreate, appDelete, appList } from '../../src/cli/commands/app.ts';
import { oauthClientCreate, oauthClientDelete, oauthClientList } from '../../src/cli/commands/oauth-client.ts';
import { policyCreate, policyDelete, policyList } from '../../src/cli/commands/policy.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { build, fileTestEnv } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { nodeSamlMetadata, rsaSpKeys } from './saml-sp-fixtures.ts';

if (postgresUrl) await postgresStore();

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const run = async (command: Command, app: Composition, argv: string[]) => (await command.run(parseArgs(argv), { app: app, auditContext: SYSTEM })).json as any;

describeEachStore('application, policy and OAuth client commands', (kind) => {
  test('create, list and delete each; the API sees what the CLI made; secrets only on create', async (t) => {
    const built = await build(t, kind);
    const app = built.composition;
    const ck = ['--customer-key', built.customer.customerKey, '--json'];

    const jwt = await run(appCreate, app, ['app', 'create', '--name', 'Portal', '--type', 'jwt', '--return-urls', 'https://p.example/cb,https://p.example/cb2', ...ck]);
    assert.match(jwt.application.applicationUuid, UUID_V4);
    assert.deepEqual(jwt, { application: {
      applicationUuid: jwt.application.applicationUuid, name: 'Portal', type: 'JWT',
      returnUrls: ['https://p.example/cb', 'https://p.example/cb2'], redirectUris: [], loginUrls: [],
    } });
    const oidc = await run(appCreate, app, ['app', 'create', '--name', 'Wiki', '--type', 'OAUTH', '--redirect-uris', 'https://w.example/cb',
      '--login-urls', 'https://w.example/login', '--post-logout-redirect-uris', 'https://w.example/bye, https://w.example/bye2', ...ck]);
    assert.match(oidc.clientSecret, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(oidc, { application: {
      applicationUuid: oidc.application.applicationUuid, name: 'Wiki', type: 'OAUTH',
      returnUrls: [], redirectUris: ['https://w.example/cb'], loginUrls: ['https://w.example/login'],
      postLogoutRedirectUris: ['https://w.example/bye', 'https://w.example/bye2'],
    }, clientSecret: oidc.clientSecret });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'Bad', '--type', 'OAUTH', '--redirect-uris', 'https://w.example/cb',
      '--post-logout-redirect-uris', 'https://w.example/bye#x', ...ck]), { message: 'postLogoutRedirectUris[0] must not contain a fragment (#)' });
    const listedApps = await run(appList, app, ['app', 'list', ...ck]);
    assert.deepEqual(listedApps, [jwt.application, oidc.application]);
    assert.deepEqual(json(await built.admin.post('/admin/applications/getall', { customerKey: built.customer.customerKey }), 200),
      { status: 'SUCCESS', applications: listedApps });

    const wide = await run(policyCreate, app, ['policy', 'create', '--app', jwt.application.applicationUuid, '--first-factor', 'MAGIC_LINK', ...ck]);
    assert.deepEqual(wide, { policyId: wide.policyId, applicationUuid: jwt.application.applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE', groupName: '' });
    const staff = await run(policyCreate, app, ['policy', 'create', '--app', jwt.application.applicationUuid, '--first-factor', 'MAGIC_LINK',
      '--second-factor', 'AUTHENTICATOR_APP', '--group', 'Staff', ...ck]);
    assert.deepEqual(staff, { policyId: staff.policyId, applicationUuid: jwt.application.applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor: 'AUTHENTICATOR_APP', groupName: 'Staff' });
    assert.deepEqual(await run(policyList, app, ['policy', 'list', ...ck]), [wide, staff]);
    await assert.rejects(run(policyCreate, app, ['policy', 'create', '--app', jwt.application.applicationUuid, '--first-factor', 'PASSWORD', ...ck]),
      { code: 'conflict', message: 'The application already has an application-wide policy (without groupName).' });
    assert.deepEqual(await run(policyDelete, app, ['policy', 'delete', '--id', String(staff.policyId), ...ck]), { policyId: staff.policyId, deleted: true });
    await assert.rejects(run(policyDelete, app, ['policy', 'delete', '--id', String(staff.policyId), ...ck]), { code: 'not_found', message: 'The policy does not exist.' });

    const client = await run(oauthClientCreate, app, ['oauth-client', 'create', '--name', 'Provisioning', ...ck]);
    assert.deepEqual(client, { clientId: client.clientId, clientSecret: client.clientSecret });
    assert.equal(await app.services.oauthClients.verifyClientSecret(client.clientId, client.clientSecret), built.customer.customerId);
    const listedClients = await run(oauthClientList, app, ['oauth-client', 'list', ...ck]);
    assert.deepEqual(listedClients, [{ clientId: client.clientId, name: 'Provisioning', createdAt: built.clock.now() }]);
    assert.deepEqual(await run(oauthClientDelete, app, ['oauth-client', 'delete', '--client-id', client.clientId, ...ck]), { clientId: client.clientId, deleted: true });
    assert.deepEqual(await run(oauthClientList, app, ['oauth-client', 'list', ...ck]), []);

    assert.deepEqual(await run(appDelete, app, ['app', 'delete', '--uuid', jwt.application.applicationUuid, ...ck]),
      { applicationUuid: jwt.application.applicationUuid, deleted: true });
    assert.deepEqual(await run(policyList, app, ['policy', 'list', ...ck]), [], 'the application\'s policies went with it');
    await assert.rejects(run(appDelete, app, ['app', 'delete', '--uuid', jwt.application.applicationUuid, ...ck]),
      { code: 'not_found', message: 'The application does not exist.' });
  });

  test('refusals: usage errors, validation, another customer\'s objects', async (t) => {
    const built = await build(t, kind);
    const app = built.composition;
    const ck = ['--customer-key', built.customer.customerKey, '--json'];
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'A', '--type', 'OIDC', ...ck]), { message: '--type must be JWT, OAUTH or SAML' });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'A', '--type', 'JWT', ...ck]),
      { code: 'invalid', message: 'returnUrls must hold at least one URL for JWT applications' });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'A', '--type', 'JWT', '--return-urls', 'ftp://x', ...ck]),
      { code: 'invalid', message: 'returnUrls[0] must start with https:// or http://' });
    await assert.rejects(run(appList, app, ['app', 'list', '--json']), { message: '--customer-key is required' });
    await assert.rejects(run(appList, app, ['app', 'list', '--customer-key', 'abc']), { message: '--customer-key must be the numeric customer key' });
    await assert.rejects(run(appList, app, ['app', 'list', '--customer-key', '1']), { code: 'not_found', message: 'No customer has the key 1.' });
    await assert.rejects(run(policyCreate, app, ['policy', 'create', '--app', 'x', '--first-factor', 'SMS', ...ck]), { message: '--first-factor must be one of MAGIC_LINK, PASSWORD, PASSKEY' });
    await assert.rejects(run(policyDelete, app, ['policy', 'delete', '--id', 'x', ...ck]), { code: 'invalid', message: 'policyId must be a positive integer' });

    const mine = await run(appCreate, app, ['app', 'create', '--name', 'Mine', '--type', 'SAML', '--entity-id', 'urn:example:mine', '--acs-urls', 'https://mine.example/acs', ...ck]);
    const policy = await run(policyCreate, app, ['policy', 'create', '--app', mine.application.applicationUuid, '--first-factor', 'MAGIC_LINK', ...ck]);
    const client = await run(oauthClientCreate, app, ['oauth-client', 'create', '--name', 'Mine', ...ck]);
    const other = await built.newCustomer();
    const theirs = ['--customer-key', other.customer.customerKey, '--json'];
    assert.deepEqual(await run(appList, app, ['app', 'list', ...theirs]), []);
    assert.deepEqual(await run(policyList, app, ['policy', 'list', ...theirs]), []);
    assert.deepEqual(await run(oauthClientList, app, ['oauth-client', 'list', ...theirs]), []);
    await assert.rejects(run(appDelete, app, ['app', 'delete', '--uuid', mine.application.applicationUuid, ...theirs]), { code: 'not_found' });
    await assert.rejects(run(policyCreate, app, ['policy', 'create', '--app', mine.application.applicationUuid, '--first-factor', 'MAGIC_LINK', '--group', 'x', ...theirs]), { code: 'not_found' });
    await assert.rejects(run(policyDelete, app, ['policy', 'delete', '--id', String(policy.policyId), ...theirs]), { code: 'not_found' });
    await assert.rejects(run(oauthClientDelete, app, ['oauth-client', 'delete', '--client-id', client.clientId, ...theirs]), { code: 'not_found' });
    assert.equal((await run(appList, app, ['app', 'list', ...ck])).length, 1);
    assert.equal((await run(policyList, app, ['policy', 'list', ...ck])).length, 1);
    assert.equal((await run(oauthClientList, app, ['oauth-client', 'list', ...ck])).length, 1);
  });

  test('SAML: from --entity-id and --acs-urls, or from an --sp-metadata file; app list shows the settings in text and --json', async (t) => {
    const built = await build(t, kind);
    const app = built.composition;
    const ck = ['--customer-key', built.customer.customerKey];
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-saml-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const keys = rsaSpKeys();
    writeFileSync(join(dir, 'sp.xml'), nodeSamlMetadata({ entityId: 'https://sp.example.com/saml', acsUrl: 'https://sp.example.com/saml/acs', sloUrl: 'https://sp.example.com/saml/slo', keys }));
    writeFileSync(join(dir, 'sp.pem'), keys.certificatePem);

    const fromMetadata = await run(appCreate, app, ['app', 'create', '--name', 'SP', '--type', 'SAML', '--sp-metadata', join(dir, 'sp.xml'), '--name-id-format', 'persistent', ...ck, '--json']);
    assert.deepEqual(fromMetadata, { application: {
      applicationUuid: fromMetadata.application.applicationUuid, name: 'SP', type: 'SAML', returnUrls: [], redirectUris: [], loginUrls: [],
      entityId: 'https://sp.example.com/saml', acsUrls: ['https://sp.example.com/saml/acs'], nameIdFormat: 'persistent',
      sloUrl: 'https://sp.example.com/saml/slo', spCertificate: keys.certificatePem,
    } });
    const created = await appCreate.run(parseArgs(['app', 'create', '--name', 'Wiki', '--type', 'saml', '--entity-id', 'urn:example:wiki',
      '--acs-urls', 'https://wiki.example/acs, https://wiki.example/acs2', '--sp-certificate', join(dir, 'sp.pem'), ...ck]), { app: app, auditContext: SYSTEM });
    const wiki = (created.json as { application: Record<string, unknown> }).application;
    assert.equal(created.text, [`Application ${wiki.applicationUuid} (SAML) created: Wiki.`, '  Entity ID: urn:example:wiki', '  ACS URLs:  https://wiki.example/acs https://wiki.example/acs2'].join('\n'));
    assert.equal(wiki.spCertificate, keys.certificatePem);

    const listed = await appList.run(parseArgs(['app', 'list', ...ck]), { app: app, auditContext: SYSTEM });
    assert.deepEqual(listed.json, [fromMetadata.application, wiki]);
    assert.equal(listed.text, [
      `${fromMetadata.application.applicationUuid}\tSAML\tSP\thttps://sp.example.com/saml https://sp.example.com/saml/acs persistent`,
      `${wiki.applicationUuid}\tSAML\tWiki\turn:example:wiki https://wiki.example/acs https://wiki.example/acs2 emailAddress`,
    ].join('\n'));
    assert.deepEqual(json(await built.admin.post('/admin/applications/getall', { customerKey: built.customer.customerKey }), 200).applications, listed.json);

    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'X', '--type', 'SAML', '--sp-metadata', join(dir, 'missing.xml'), ...ck]),
      { constructor: UsageError, message: `--sp-metadata: cannot read ${join(dir, 'missing.xml')}` });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'X', '--type', 'SAML', '--sp-metadata', join(dir, 'sp.xml'), ...ck]),
      { code: 'conflict', message: 'an application with this entityId already exists' });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'X', '--type', 'SAML', '--entity-id', 'urn:x', '--acs-urls', 'https://x.example/acs', '--sp-certificate', join(dir, 'sp.xml'), ...ck]),
      { code: 'invalid', message: 'spCertificate must be one PEM certificate (-----BEGIN CERTIFICATE----- …)' });
    await assert.rejects(run(appCreate, app, ['app', 'create', '--name', 'X', '--type', 'SAML', '--entity-id', 'urn:x', ...ck]),
      { code: 'invalid', message: 'acsUrls must hold at least one URL for SAML applications' });
    assert.equal((await appList.run(parseArgs(['app', 'list', ...ck]), { app: app, auditContext: SYSTEM })).text.split('\n').length, 2);
  });
});

const execFileAsync = promisify(execFile);

test('the commands through the CLI entry point, --json, on a SQLite file', async (t) => {
  const env = fileTestEnv({ LATCHKEY_SITE_CUSTOMER_KEY: '' });
  t.after(() => rmSync(env.LATCHKEY_DATA_DIR, { recursive: true, force: true }));
  const composition = await compose(loadConfig(env));
  let customerKey: string;
  try {
    customerKey = (await composition.services.customers.create({ email: 'owner@example.test' })).customerKey;
  } finally {
    await composition.close();
  }
  const cli = async (...args: string[]) => {
    try {
      const { stdout } = await execFileAsync(process.execPath, ['bin/latchkey.js', ...args, '--customer-key', customerKey, '--json'], { env, cwd: process.cwd() });
      return { code: 0, stdout: JSON.parse(stdout), stderr: '' };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: JSON.parse(failed.stderr) };
    }
  };
  const created = await cli('app', 'create', '--name', 'Portal', '--type', 'JWT', '--return-urls', 'https://p.example/cb');
  assert.equal(created.code, 0, JSON.stringify(created.stderr));
  const uuid = created.stdout.application.applicationUuid;
  const policy = await cli('policy', 'create', '--app', uuid, '--first-factor', 'MAGIC_LINK');
  assert.deepEqual(policy.stdout, { policyId: policy.stdout.policyId, applicationUuid: uuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE', groupName: '' });
  const client = await cli('oauth-client', 'create', '--name', 'CI');
  assert.deepEqual(Object.keys(client.stdout), ['clientId', 'clientSecret']);
  assert.deepEqual((await cli('app', 'list')).stdout, [created.stdout.application]);
  assert.deepEqual(await cli('app', 'delete', '--uuid', uuid), { code: 0, stdout: { applicationUuid: uuid, deleted: true }, stderr: '' });
  assert.deepEqual(await cli('policy', 'list'), { code: 0, stdout: [], stderr: '' });
  assert.deepEqual(await cli('app', 'create', '--name', 'X', '--type', 'NOPE'),
    { code: 2, stdout: '', stderr: { error: 'usage', message: '--type must be JWT, OAUTH or SAML' } });
  assert.deepEqual(await cli('oauth-client', 'delete', '--client-id', 'nope'),
    { code: 1, stdout: '', stderr: { error: 'not_found', message: 'The OAuth client does not exist.' } });
});
