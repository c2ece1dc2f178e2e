/**
 * Logs: CR/LF in anything a request controls (login names, the URL, X-Request-Id, User-Agent and
 * other headers) never splits a log line: each line the faces write parses as one JSON object.
 * Secrets: after a run that makes and uses every kind of secret Latchkey holds, none of their values
 * appears in clear in any captured log line nor in a raw dump of every table (both stores).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import * as owners from '../../src/console/owners/repo.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { hashPassword } from '../../src/lib/passwords.ts';
import { describeEachStore, type StoreKind } from '../helpers/stores.ts';
import { PASSWORD, RETURN_URL, setup, type AbuseEnv } from './helpers.ts';

const INJECTED = '\r\n{"level":50,"msg":"forged line"}\n\r';
const GA = 'GOOGLE AUTHENTICATOR';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Each write is one line: ends with \n, holds no other line break, parses as one JSON object. */
function assertOneJsonObjectPerLine(logs: string[]): void {
  assert.ok(logs.length > 0);
  for (const line of logs) {
    assert.ok(line.endsWith('\n'), line);
    const body = line.slice(0, -1);
    assert.doesNotMatch(body, /[\r\n\u2028\u2029]/, body);
    const parsed = JSON.parse(body);
    assert.equal(typeof parsed, 'object');
    assert.notEqual(parsed.msg, 'forged line');
  }
}

describeEachStore('abuse: log injection', (kind) => {
  test('CR/LF in login names, URLs and headers never splits a log line', async (t) => {
    const env = await setup(t, kind, { LATCHKEY_LOG_LEVEL: 'trace' });
    const site = await env.site();
    await env.addUser('logged');
    const headers = {
      'x-request-id': `id${INJECTED}`, 'user-agent': `agent${INJECTED}`, referer: `ref${INJECTED}`,
      'x-forwarded-for': `1.2.3.4${INJECTED}`, host: `id.example.test${INJECTED}`,
    };
    const requests: [FastifyInstance, InjectOptions][] = [
      [site, { method: 'POST', url: '/cms-json/api/v1/token', headers, payload: { username: `logged${INJECTED}`, password: `pw${INJECTED}` } }],
      [site, { method: 'POST', url: '/cms-json/api/v1/token', headers: { ...headers, ...FORM }, payload: `username=${encodeURIComponent(`x${INJECTED}`)}&password=x` }],
      [site, { method: 'GET', url: `/cms-json/cms/v2/posts?search=${encodeURIComponent(INJECTED)}`, headers }],
      [site, { method: 'GET', url: `/nowhere/%0d%0a${encodeURIComponent(INJECTED)}`, headers }],
      [site, { method: 'GET', url: `/nowhere/${INJECTED}`, headers }],
      [env.identity, { method: 'GET', url: `/api/${INJECTED}`, headers }],
      [env.identity, { method: 'POST', url: '/api/admin/users/get', headers: { ...headers, ...env.admin.headers(), 'content-type': 'application/json' }, payload: { customerKey: Number(env.customer.customerKey), username: `ghost${INJECTED}` } }],
      [env.identity, { method: 'POST', url: '/api/admin/users/create', headers: { ...headers, ...env.admin.headers(), 'content-type': 'application/json' }, payload: { customerKey: Number(env.customer.customerKey), username: `bad${INJECTED}`, firstName: INJECTED, lastName: 'x' } }],
      [env.identity, { method: 'GET', url: `/magic/%0d%0a${encodeURIComponent(INJECTED)}`, headers }],
      [env.identity, { method: 'POST', url: '/console/sign-in', headers: { ...headers, ...FORM }, payload: `email=${encodeURIComponent(`a@b.c${INJECTED}`)}&password=x` }],
      [env.identity, { method: 'POST', url: '/oauth/token', headers: { ...headers, ...FORM }, payload: `grant_type=client_credentials&client_id=${encodeURIComponent(INJECTED)}&client_secret=x` }],
    ];
    for (const [app, options] of requests) {
      const res = await app.inject(options);
      assert.ok(res.statusCode < 500, `${options.url}: ${res.statusCode} ${res.body}`);
      // The request id echoed back is never the caller's text with line breaks.
      assert.doesNotMatch(String(res.headers['x-request-id'] ?? ''), /[\r\n]/);
    }
    // The caller's text did reach the logs (the Host header and the URL are logged), escaped inside one line.
    assert.ok(env.logs.some((line) => line.includes('forged line')), 'the injected text reached the logs');
    assertOneJsonObjectPerLine(env.logs);
  });
});

/** Every row of every table, as text (a raw dump of the store). */
async function dumpEveryTable(env: AbuseEnv, kind: StoreKind): Promise<string> {
  const db = env.composition.store.db;
  const tables = kind === 'sqlite'
    ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows.map((r) => r.name)
    : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)).rows.map((r) => r.name);
  assert.ok(tables.includes('users') && tables.includes('console_sessions') && tables.includes('magic_links'), tables.join(','));
  let dump = '';
  for (const table of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db)).rows;
    dump += `${table}\n${JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? v.toString('base64') + v.toString('hex') + v.toString('latin1') : v))}\n`;
  }
  return dump;
}

describeEachStore('abuse: secrets grep', (kind) => {
  test('no secret of any kind is in the logs or in a raw dump of every table', async (t) => {
    const env = await setup(t, kind, { LATCHKEY_LOG_LEVEL: 'trace', LATCHKEY_SITE_APIKEY_HEADER: 'X-Api-Key' });
    const site = await env.site();
    const { services } = env.composition;
    const ck = Number(env.customer.customerKey);
    const secrets: Record<string, string> = {};
    const json = { 'content-type': 'application/json' };

    // Admin API key (signs every admin call below).
    secrets.adminApiKey = env.customer.apiKey;
    // Passwords: created, used, changed.
    const newPassword = 'second-harbour-otter-77';
    secrets.password = PASSWORD;
    secrets.newPassword = newPassword;
    assert.equal((await env.admin.post('/admin/users/create', { customerKey: ck, username: 'keeper', email: 'keeper@example.test', firstName: 'K', lastName: 'P', password: PASSWORD })).statusCode, 200);
    const login = await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'keeper', password: PASSWORD } });
    assert.equal(login.statusCode, 200, login.body);
    secrets.siteJwt = login.json().jwt_token;
    const changed = await env.admin.post('/admin/users/change-password', { customerKey: ck, username: 'keeper', oldPassword: PASSWORD, password: newPassword });
    assert.equal(changed.statusCode, 200, changed.body);
    await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'keeper', password: 'wrong-guess-in-logs' } });
    secrets.wrongPassword = 'wrong-guess-in-logs';
    const password = newPassword;
    assert.ok(await services.users.verifyCredentials(env.customer.customerId, 'keeper', password));

    // Site API keys (service, as the CLI makes them) and API tokens (route), each used once.
    secrets.siteApiKey = (await services.siteApiKeys.create(env.customer.customerId, { login: 'keeper' }, SYSTEM)).apiKey;
    const byKey = await site.inject({ method: 'GET', url: '/cms-json/cms/v2/posts', headers: { 'x-api-key': secrets.siteApiKey } });
    assert.equal(byKey.statusCode, 200, byKey.body);
    const basic = `Basic ${Buffer.from(`keeper:${password}`).toString('base64')}`;
    const token = await site.inject({ method: 'POST', url: '/rest/api/2/tokens', headers: { authorization: basic, ...json }, payload: { name: 'ci', type: 'bearer' } });
    assert.equal(token.statusCode, 201, token.body);
    secrets.apiToken = token.json().token ?? token.json().rawToken ?? token.json().secret;
    assert.ok(secrets.apiToken, token.body);
    assert.ok((await site.inject({ method: 'GET', url: '/rest/api/2/tokens', headers: { authorization: `Bearer ${secrets.apiToken}` } })).statusCode < 500);

    // TOTP secret: registered, validated, then used at login.
    const registration = (await env.admin.post('/auth/google-auth-secret', { customerKey: ck, username: 'keeper', authenticatorType: GA })).json();
    secrets.totpSecret = registration.secret;
    assert.equal((await env.admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username: 'keeper', authenticatorType: GA, secret: registration.secret, otpToken: totpAt(registration.secret, env.clock.now()) })).statusCode, 200);
    env.clock.advance(30_000);
    assert.equal((await site.inject({ method: 'POST', url: '/cms-json/api/v1/token', payload: { username: 'keeper', password, otp: totpAt(registration.secret, env.clock.now()) } })).statusCode, 200);

    // OAuth client secret and its access token; application client secret.
    const client = (await env.admin.post('/admin/oauth-clients/create', { customerKey: ck, name: 'Ops' })).json();
    secrets.oauthClientSecret = client.clientSecret;
    const issued = await env.identity.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: `grant_type=client_credentials&scope=magiclink&client_id=${client.clientId}&client_secret=${client.clientSecret}` });
    assert.equal(issued.statusCode, 200, issued.body);
    secrets.oauthAccessToken = issued.json().access_token;
    const oauthApp = (await env.admin.post('/admin/applications/create', { customerKey: ck, name: 'OA', type: 'OAUTH', redirectUris: [RETURN_URL] })).json();
    secrets.applicationClientSecret = oauthApp.clientSecret;

    // SCIM token: made through the admin API, then looked up as every /scim/v2 request's bearer is.
    secrets.scimToken = (await env.admin.post('/admin/scim-tokens/create', { customerKey: ck, name: 'Okta' })).json().token;
    assert.equal((await services.scimTokens.authenticate(secrets.scimToken))?.customerId, env.customer.customerId);

    // Magic-link token: generated with the bearer token, read from the mail file, used on the landing.
    const appUuid = await env.magicApp();
    const generated = await env.identity.inject({ method: 'POST', url: '/api/admin/magiclink/generate', headers: { authorization: `Bearer ${secrets.oauthAccessToken}`, ...json }, payload: { username: 'keeper', applicationUuid: appUuid, redirectUri: RETURN_URL } });
    assert.equal(generated.statusCode, 200, generated.body);
    await env.composition.mailWorker.runOnce();
    const outbox = join(env.composition.config.dataDir, 'outbox');
    const mail = readdirSync(outbox).map((f) => readFileSync(join(outbox, f), 'utf8').replace(/=\r?\n/g, '')).join('\n');
    const link = /\/magic\/([A-Za-z0-9_-]{43})/.exec(mail);
    assert.ok(link, 'the link is in the mail');
    secrets.magicLinkToken = link[1];
    assert.equal((await env.identity.inject({ method: 'GET', url: `/magic/${link[1]}` })).statusCode, 200);
    const landed = await env.identity.inject({ method: 'POST', url: `/magic/${link[1]}`, headers: FORM, payload: '' });
    assert.equal(landed.statusCode, 303, landed.body);
    secrets.idToken = new URL(String(landed.headers.location)).searchParams.get('id_token')!;

    // Console: the owner's password and the session id of a signed-in console.
    const ownerPassword = 'console-owner-secret-91';
    secrets.consolePassword = ownerPassword;
    const owner = await owners.findOwnerByKey(env.composition.store.db, env.customer.customerKey);
    await owners.setPasswordHash(env.composition.store.db, owner!.customerId, await hashPassword(ownerPassword), env.clock.now());
    const form = await env.identity.inject({ method: 'GET', url: '/console/sign-in' });
    const csrfCookie = [form.headers['set-cookie']].flat().map((c) => String(c).split(';')[0]).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1];
    const signedIn = await env.identity.inject({
      method: 'POST', url: '/console/sign-in', headers: { ...FORM, cookie: csrfCookie },
      payload: `_csrf=${encodeURIComponent(csrf)}&email=${encodeURIComponent(owner!.email)}&password=${ownerPassword}`,
    });
    assert.equal(signedIn.statusCode, 303, signedIn.body);
    const session = [signedIn.headers['set-cookie']].flat().map(String).find((c) => c.startsWith('lk_console='));
    assert.ok(session, 'a console session cookie');
    secrets.consoleSessionId = decodeURIComponent(session.split(';')[0].slice('lk_console='.length));
    assert.equal((await env.identity.inject({ method: 'GET', url: '/console/account', headers: { cookie: `${csrfCookie}; lk_console=${secrets.consoleSessionId}` } })).statusCode, 200);

    // The owner's one-time sign-in link: shown, used (it sets another console password), refused once used.
    secrets.firstSignInToken = await services.consoleFirstSignIn.issue(env.customer.customerId);
    const firstSignIn = `/console/first-sign-in/${secrets.firstSignInToken}`;
    const linkForm = await env.identity.inject({ method: 'GET', url: firstSignIn });
    assert.equal(linkForm.statusCode, 200, linkForm.body);
    const linkCookie = [linkForm.headers['set-cookie']].flat().map((c) => String(c).split(';')[0]).join('; ');
    const linkCsrf = encodeURIComponent(/name="_csrf" value="([^"]+)"/.exec(linkForm.body)![1]);
    secrets.firstSignInPassword = 'first-sign-in-secret-27';
    const used = await env.identity.inject({
      method: 'POST', url: firstSignIn, headers: { ...FORM, cookie: linkCookie },
      payload: `_csrf=${linkCsrf}&newPassword=${secrets.firstSignInPassword}&confirmPassword=${secrets.firstSignInPassword}`,
    });
    assert.equal(used.statusCode, 303, used.body);
    assert.equal((await env.identity.inject({ method: 'GET', url: firstSignIn })).statusCode, 410);

    // Forgotten password: asked on the page, the link read from the mail file, looked at and used; then
    // recovery codes made and one used.
    const issuerPath = `/customers/${env.customer.customerKey}`;
    assert.equal((await env.identity.inject({ method: 'POST', url: `${issuerPath}/forgot`, headers: FORM, payload: 'login=keeper' })).statusCode, 200);
    let resetToken: string | undefined;
    for (const deadline = Date.now() + 10_000; !resetToken;) {
      await env.composition.mailWorker.runOnce();
      const mails = readdirSync(outbox).map((f) => readFileSync(join(outbox, f), 'utf8').replace(/=\r?\n/g, '')).join('\n');
      resetToken = /\/reset\/([A-Za-z0-9_-]{43})/.exec(mails)?.[1];
      if (!resetToken) {
        assert.ok(Date.now() < deadline, 'the reset mail is written');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    secrets.passwordResetToken = resetToken;
    assert.equal((await env.identity.inject({ method: 'GET', url: `${issuerPath}/reset/${resetToken}` })).statusCode, 200);
    secrets.resetPassword = 'reset-lantern-puffin-38';
    const reset = await env.identity.inject({
      method: 'POST', url: `${issuerPath}/reset/${resetToken}`, headers: FORM,
      payload: `newPassword=${secrets.resetPassword}&confirmPassword=${secrets.resetPassword}`,
    });
    assert.equal(reset.statusCode, 200, reset.body);
    const keeper = (await services.users.findByLogin(env.customer.customerId, 'keeper'))!;
    const codes = await services.recoveryCodes.generate(env.customer.customerId, keeper.id);
    assert.equal(await services.recoveryCodes.use(env.customer.customerId, keeper.id, codes[0]!), true);
    codes.forEach((code, i) => { secrets[`recoveryCode${i}`] = code; });

    const dump = await dumpEveryTable(env, kind);
    const logs = env.logs.join('');
    assert.ok(env.logs.length > 30, 'the run was logged');
    for (const [name, value] of Object.entries(secrets)) {
      assert.ok(typeof value === 'string' && value.length >= 8, `${name} was made`);
      assert.equal(logs.includes(value), false, `${name} is in the logs`);
      assert.equal(dump.includes(value), false, `${name} is in the database dump`);
    }
    assertOneJsonObjectPerLine(env.logs);
  });
});
