/**
 * `latchkey app|policy|oauth-client create|list|delete` with --json: in process on both stores (the
 * commands call the same services as the routes), and as a child process on a SQLite file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parseArgs } from '../../src/cli/args.ts';
import type { Command } from '../../src/cli/command.ts';
import { appCreate, appDelete, appList } from '../../src/cli/commands/app.ts';
import { oauthClientCreate, oauthClientDelete, oauthClientList } from '../../src/cli/commands/oauth-client.ts';
import { policyCreate, policyDelete, policyList } from '../../src/cli/commands/policy.ts';
import { compose, type Composition } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import { build, fileTestEnv } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const run = async (command: Command, app: Composition, argv: string[]) => (await command.run(parseArgs(argv), { app })).json as any;

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
      '--login-urls', 'https://w.example/login', ...ck]);
    assert.match(oidc.clientSecret, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(oidc, { application: {
      applicationUuid: oidc.application.applicationUuid, name: 'Wiki', type: 'OAUTH',
      returnUrls: [], redirectUris: ['https://w.example/cb'], loginUrls: ['https://w.example/login'],
    }, clientSecret: oidc.clientSecret });
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
    await assert.rejects(run(policyCreate, app, ['policy', 'create', '--app', 'x', '--first-factor', 'SMS', ...ck]), { message: '--first-factor must be MAGIC_LINK or PASSWORD' });
    await assert.rejects(run(policyDelete, app, ['policy', 'delete', '--id', 'x', ...ck]), { code: 'invalid', message: 'policyId must be a positive integer' });

    const mine = await run(appCreate, app, ['app', 'create', '--name', 'Mine', '--type', 'SAML', ...ck]);
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
      const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args, '--customer-key', customerKey, '--json'], { env, cwd: process.cwd() });
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
