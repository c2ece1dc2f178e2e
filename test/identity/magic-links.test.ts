/**
 * INVITE magic links end to end, on both stores, with real parts: the admin routes (signature or
 * bearer), the outbox drained to a real SMTP server in this process, the link from the received mail
 * used on the landing, the JWT application's id_token verified with jose against the JWKS named by the
 * customer's discovery document. The link must appear nowhere but in the mail.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test, type TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import { sql } from 'kysely';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { updateApplication } from '../../src/identity/applications/repo.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { createTestClock, type TestClock } from '../../src/lib/clock.ts';
import { adminClient, testEnv, type AdminClient } from '../helpers/app.ts';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.ts';
import { describeEachStore, openTestStore, type StoreKind } from '../helpers/stores.ts';

const PUBLIC_URL = 'http://id.example.test';
const RETURN_URL = 'https://app.example.test/sso/return';
const DENIED = { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' };
const NO_USER = { status: 'ERROR', statusCode: 404, message: 'The username does not exist.' };
const NO_APP = { status: 'ERROR', statusCode: 404, message: 'The application does not exist.' };
const NO_INVITE = { status: 'FAILED', message: 'No active invite link was found for the user.' };
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const LINK = /http:\/\/id\.example\.test\/magic\/([A-Za-z0-9_-]{43})/;

let sink: SmtpSink;
before(async () => { sink = await startSmtpSink(); });
after(() => sink.stop());

interface Env {
  composition: Composition;
  identity: FastifyInstance;
  clock: TestClock;
  customer: CreatedCustomer;
  admin: AdminClient;
  logs: string[];
  /** Every response body and header seen by the test (the link must not be in any). */
  seen: string[];
  newCustomer(): Promise<{ customer: CreatedCustomer; admin: AdminClient }>;
}

const email = () => `owner-${randomBytes(5).toString('hex')}@example.test`;

async function setup(t: TestContext, kind: StoreKind): Promise<Env> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const logs: string[] = [];
  const composition = await compose(
    loadConfig(testEnv({ LATCHKEY_SMTP_URL: sink.url, LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_LOG_LEVEL: 'info' })),
    { clock, store, logStream: { write: (line) => { logs.push(line); } } },
  );
  const identity = await composition.buildIdentityApp();
  t.after(async () => {
    await identity.close();
    await composition.close();
    if (owned) await store.close();
  });
  const seen: string[] = [];
  const record = (client: AdminClient): AdminClient => ({
    headers: client.headers,
    post: async (path, body, options) => { const r = await client.post(path, body, options); seen.push(r.body, JSON.stringify(r.headers)); return r; },
    get: async (path, options) => { const r = await client.get(path, options); seen.push(r.body, JSON.stringify(r.headers)); return r; },
  });
  const customer = await composition.services.customers.create({ email: email() });
  return {
    composition, identity, clock, customer, logs, seen,
    admin: record(adminClient(identity, customer, clock)),
    async newCustomer() {
      const other = await composition.services.customers.create({ email: email() });
      return { customer: other, admin: record(adminClient(identity, other, clock)) };
    },
  };
}

async function inject(env: Env, options: InjectOptions): Promise<LightMyRequestResponse> {
  const response = await env.identity.inject(options);
  env.seen.push(response.body, JSON.stringify(response.headers));
  return response;
}

/** A user, a JWT application and a MAGIC_LINK policy for it. */
const samlSp = () => ({ entityId: `https://sp.example.test/${randomBytes(4).toString('hex')}`, acsUrls: ['https://sp.example.test/acs', 'https://sp.example.test/acs2'], nameIdFormat: 'emailAddress' as const });

async function fixture(env: Env, options: { secondFactor?: 'NONE' | 'AUTHENTICATOR_APP'; type?: 'JWT' | 'OAUTH' | 'SAML' } = {}) {
  const username = `u${randomBytes(4).toString('hex')}`;
  const userEmail = `${username}@example.test`;
  const created = await env.admin.post('/admin/users/create', { customerKey: Number(env.customer.customerKey), username, email: userEmail, firstName: 'Ada', lastName: 'Lovelace' });
  assert.equal(created.statusCode, 200, created.body);
  const type = options.type ?? 'JWT';
  const sp = samlSp();
  const { application } = await env.composition.services.applications.create(env.customer.customerId, {
    name: 'Portal', type,
    ...(type === 'JWT' ? { returnUrls: [RETURN_URL, 'https://app.example.test/other?x=1'] } : {}),
    ...(type === 'OAUTH' ? { redirectUris: ['https://rp.example.test/cb'], loginUrls: ['https://rp.example.test/login', 'https://rp.example.test/login2'] } : {}),
    ...(type === 'SAML' ? sp : {}),
  }, SYSTEM);
  // Until the SAML application rules (a parallel branch) store the SP's settings, the fixture writes them.
  if (type === 'SAML' && !application.saml) {
    await updateApplication(env.composition.store.db, env.customer.customerId, application.uuid, { ...application, saml: { ...sp, sloUrl: null, spCertificate: null } });
  }
  await env.composition.services.policies.create(env.customer.customerId, {
    applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor: options.secondFactor ?? 'NONE',
  }, SYSTEM);
  return { username, email: userEmail, applicationUuid: application.uuid, application };
}

/** Drains the outbox and returns the link of the newest mail to `to`. */
async function linkFor(env: Env, to: string, count = 1): Promise<string> {
  const before = sink.messages.filter((m) => m.envelope.to.includes(to)).length;
  await env.composition.mailWorker.runOnce();
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mails = sink.messages.filter((m) => m.envelope.to.includes(to));
    if (mails.length >= Math.max(count, before + 1)) {
      const mail = mails.at(-1)!;
      const match = LINK.exec(mail.parsed.text ?? '');
      assert.ok(match, 'the mail holds the link');
      assert.ok(String(mail.parsed.html).includes(match[0]), 'the HTML part holds the link');
      return match[0];
    }
    if (Date.now() > deadline) throw new Error(`no mail to ${to}`);
    await sink.waitFor(sink.messages.length + 1, 2_000).catch(() => {});
  }
}

const path = (link: string) => new URL(link).pathname;
const generate = (env: Env, body: Record<string, unknown> | string, admin = env.admin) => admin.post('/admin/magiclink/generate', body);

const LANDING_HEADERS = (formAction: string) => ({
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  formAction,
});

function assertLandingHeaders(response: LightMyRequestResponse, formAction = "'self'"): void {
  const csp = String(response.headers['content-security-policy']);
  assert.deepEqual({
    'cache-control': response.headers['cache-control'],
    'referrer-policy': response.headers['referrer-policy'],
    'x-frame-options': response.headers['x-frame-options'],
    'x-content-type-options': response.headers['x-content-type-options'],
    formAction: /form-action ([^;]+)/.exec(csp)?.[1],
  }, LANDING_HEADERS(formAction));
  assert.match(csp, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; /);
  assert.match(csp, /frame-ancestors 'none'/);
}

/** Every row of every table, as text (what an operator's dump would hold). */
async function dumpDatabase(env: Env): Promise<string> {
  const db = env.composition.store.db;
  const tables = env.composition.store.dialect === 'postgres'
    ? (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)).rows
    : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows;
  const parts: string[] = [];
  for (const { name } of tables) parts.push(JSON.stringify((await sql`select * from ${sql.table(name)}`.execute(db)).rows));
  return parts.join('\n');
}

async function discoveryJwks(env: Env): Promise<JSONWebKeySet> {
  const discovery = await env.identity.inject({ method: 'GET', url: `/customers/${env.customer.customerKey}/.well-known/openid-configuration` });
  assert.equal(discovery.statusCode, 200, discovery.body);
  const jwksUri = new URL((discovery.json() as { jwks_uri: string }).jwks_uri);
  const jwks = await env.identity.inject({ method: 'GET', url: jwksUri.pathname });
  assert.equal(jwks.statusCode, 200);
  return jwks.json() as JSONWebKeySet;
}

async function accessToken(env: Env, customerId = env.customer.customerId): Promise<string> {
  const { client, clientSecret } = await env.composition.services.oauthClients.create(customerId, { name: 'automation' }, SYSTEM);
  const response = await env.identity.inject({
    method: 'POST', url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}` },
    payload: 'grant_type=client_credentials',
  });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { access_token: string }).access_token;
}

describeEachStore('magic links', (kind) => {
  test('generate → mail → GET does not consume → POST signs in to the JWT application; the link is nowhere else', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    const response = await generate(env, { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { correlationId: string };
    assert.match(body.correlationId, UUID_V4);
    assert.deepEqual(body, { status: 'SUCCESS', message: 'The magic link has been sent to the user\'s registered e-mail address.', correlationId: body.correlationId });
    assert.ok(env.logs.some((line) => line.includes(body.correlationId) && line.includes('magic link generated')), 'the correlationId is logged');
    assert.ok(env.logs.some((line) => line.includes(body.correlationId) && line.includes('request completed')));

    const link = await linkFor(env, f.email);
    const mail = sink.messages.filter((m) => m.envelope.to.includes(f.email)).at(-1)!;
    assert.equal(mail.parsed.subject, 'Sign in to Portal');

    // Prefetch (mail scanners): twice, nothing used.
    for (let i = 0; i < 2; i++) {
      const page = await inject(env, { method: 'GET', url: path(link) });
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(page.body, /<html lang="en">/);
      assert.match(page.body, /<form method="post">/);
      assert.equal((page.body.match(/<h1>/g) ?? []).length, 1);
      assert.doesNotMatch(page.body, /<script/);
      assertLandingHeaders(page, "'self' https://app.example.test");
    }

    const landed = await inject(env, { method: 'POST', url: path(link), headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    assert.equal(landed.statusCode, 303, landed.body);
    assertLandingHeaders(landed, "'self' https://app.example.test");
    const location = String(landed.headers.location);
    assert.ok(location.startsWith(`${RETURN_URL}?id_token=`), location);
    const idToken = new URL(location).searchParams.get('id_token')!;
    const issuer = `${PUBLIC_URL}/customers/${env.customer.customerKey}`;
    const { payload, protectedHeader } = await jwtVerify(idToken, createLocalJWKSet(await discoveryJwks(env)), {
      issuer, audience: f.applicationUuid, algorithms: ['RS256'], currentDate: new Date(env.clock.now()),
    });
    assert.equal(protectedHeader.alg, 'RS256');
    const user = await env.composition.services.users.findByLogin(env.customer.customerId, f.username);
    assert.deepEqual({ ...payload, iat: 0, exp: 0, jti: '' }, {
      iss: issuer, aud: f.applicationUuid, sub: String(user!.id), email: f.email, preferred_username: f.username,
      amr: ['email'], iat: 0, exp: 0, jti: '',
    });
    assert.ok(payload.exp! - payload.iat! <= 300 && payload.exp! > payload.iat!);
    assert.equal(typeof payload.jti, 'string');

    // Used: both methods answer 410 now.
    for (const method of ['GET', 'POST'] as const) {
      const dead = await inject(env, { method, url: path(link) });
      assert.equal(dead.statusCode, 410);
      assert.match(dead.body, /This sign-in link cannot be used/);
      assertLandingHeaders(dead);
    }

    // Nowhere in clear but the mail: responses, log lines, the database.
    const token = LINK.exec(link)![1];
    for (const text of env.seen) assert.ok(!text.includes(token), 'a response holds the token');
    for (const line of env.logs) assert.ok(!line.includes(token), `a log line holds the token: ${line}`);
    assert.ok(!(await dumpDatabase(env)).includes(token), 'the database holds the token');
  });

  test('20 concurrent POSTs on one link: exactly one signs in', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    assert.equal((await generate(env, { username: f.email, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL })).statusCode, 200);
    const link = await linkFor(env, f.email);
    const answers = await Promise.all(Array.from({ length: 20 }, () => inject(env, { method: 'POST', url: path(link) })));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [303, ...Array(19).fill(410)]);
  });

  test('replaced, revoked, expired and disabled-user links answer 410', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    const gen = (extra: Record<string, unknown> = {}) => generate(env, { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL, ...extra });

    // Replaced by a newer INVITE for the same user and application.
    assert.equal((await gen()).statusCode, 200);
    const first = await linkFor(env, f.email, 1);
    assert.equal((await gen()).statusCode, 200);
    const second = await linkFor(env, f.email, 2);
    assert.notEqual(first, second);
    assert.equal((await inject(env, { method: 'GET', url: path(first) })).statusCode, 410);
    assert.equal((await inject(env, { method: 'POST', url: path(first) })).statusCode, 410);
    assert.equal((await inject(env, { method: 'GET', url: path(second) })).statusCode, 200);

    // Revoked: 200, then the link is dead, and a second revoke finds nothing.
    const revoked = await env.admin.post('/admin/magiclink/revoke', { username: f.username });
    assert.equal(revoked.statusCode, 200);
    assert.deepEqual(revoked.json(), { status: 'SUCCESS', message: 'The invite link has been revoked.' });
    assert.equal((await inject(env, { method: 'POST', url: path(second) })).statusCode, 410);
    const again = await env.admin.post('/admin/magiclink/revoke', { username: f.username });
    assert.equal(again.statusCode, 404);
    assert.deepEqual(again.json(), NO_INVITE);
    const unknown = await env.admin.post('/admin/magiclink/revoke', { username: 'nobody-here' });
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), NO_INVITE);

    // Expired: one minute, then the clock moves past it.
    assert.equal((await gen({ expiryMinutes: 1 })).statusCode, 200);
    const expiring = await linkFor(env, f.email, 3);
    assert.equal((await inject(env, { method: 'GET', url: path(expiring) })).statusCode, 200);
    env.clock.advance(60_001);
    assert.equal((await inject(env, { method: 'GET', url: path(expiring) })).statusCode, 410);
    assert.equal((await inject(env, { method: 'POST', url: path(expiring) })).statusCode, 410);
    // An expired link is not active: revoke finds none.
    assert.equal((await env.admin.post('/admin/magiclink/revoke', { username: f.username })).statusCode, 404);

    // Disabled user.
    assert.equal((await gen()).statusCode, 200);
    const beforeDisable = await linkFor(env, f.email, 4);
    // Live, and its user now kept in this node's memory.
    assert.equal((await inject(env, { method: 'GET', url: path(beforeDisable) })).statusCode, 200);
    const disabled = await env.admin.post('/admin/users/disable', { customerKey: Number(env.customer.customerKey), username: f.username });
    assert.equal(disabled.statusCode, 200, disabled.body);
    // At once, the clock standing still: the write through this node makes the kept user stale.
    assert.equal((await inject(env, { method: 'GET', url: path(beforeDisable) })).statusCode, 410);
    assert.equal((await inject(env, { method: 'POST', url: path(beforeDisable) })).statusCode, 410);

    // Unknown and malformed tokens.
    assert.equal((await inject(env, { method: 'GET', url: `/magic/${randomBytes(32).toString('base64url')}` })).statusCode, 410);
    assert.equal((await inject(env, { method: 'GET', url: '/magic/short' })).statusCode, 410);
  });

  test('deleting the application kills its links', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    assert.equal((await generate(env, { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL })).statusCode, 200);
    const link = await linkFor(env, f.email);
    await env.composition.services.applications.delete(env.customer.customerId, f.applicationUuid, SYSTEM);
    assert.equal((await inject(env, { method: 'GET', url: path(link) })).statusCode, 410);
  });

  test('second factor: the authenticator code is asked, a real TOTP code signs in, replay and 5 wrong codes are refused', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env, { secondFactor: 'AUTHENTICATOR_APP' });
    const gen = () => generate(env, { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL });

    // No authenticator yet: refused without using the link.
    assert.equal((await gen()).statusCode, 200);
    const waiting = await linkFor(env, f.email, 1);
    const refused = await inject(env, { method: 'POST', url: path(waiting) });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /An authenticator app is required/);

    const mfa = env.composition.services.mfa;
    const registration = await mfa.register(env.customer.customerId, { login: f.username, customerDisplayName: 'Acme' });
    const secret = registration.secret;
    env.clock.advance(30_000);
    await mfa.validate(env.customer.customerId, { login: f.username, secret, otp: totpAt(secret, env.clock.now()) }, SYSTEM);
    env.clock.advance(30_000);

    const code = await inject(env, { method: 'POST', url: path(waiting) });
    assert.equal(code.statusCode, 200);
    assert.match(code.body, /<label for="code">Authenticator code<\/label>/);
    assertLandingHeaders(code, "'self' https://app.example.test");
    const cookie = String(code.headers['set-cookie']);
    assert.match(cookie, /^lk_magic_login=[A-Za-z0-9_-]{43}; Path=\/magic; Max-Age=300; HttpOnly; SameSite=Strict$/);
    const cookieHeader = cookie.split(';')[0];
    const submit = (otp: string, c = cookieHeader) => inject(env, {
      method: 'POST', url: '/magic/code', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: c }, payload: `code=${otp}`,
    });

    const wrong = await submit('000000' === totpAt(secret, env.clock.now()) ? '111111' : '000000');
    assert.equal(wrong.statusCode, 400);
    assert.match(wrong.body, /The code is incorrect \(4 attempts left\)/);
    const right = totpAt(secret, env.clock.now());
    const landed = await submit(right);
    assert.equal(landed.statusCode, 303, landed.body);
    assert.deepEqual(decodeJwt(new URL(String(landed.headers.location)).searchParams.get('id_token')!).amr, ['email', 'otp']);
    // The pending login is over.
    assert.equal((await submit(right)).statusCode, 410);

    // A new link: the same code again is a replay; then 5 wrong codes end the sign-in.
    assert.equal((await gen()).statusCode, 200);
    const next = await linkFor(env, f.email, 2);
    const step = await inject(env, { method: 'POST', url: path(next) });
    const nextCookie = String(step.headers['set-cookie']).split(';')[0];
    const replay = await submit(right, nextCookie);
    assert.equal(replay.statusCode, 400);
    assert.match(replay.body, /already been used/);
    const bad = right === '000000' ? '111111' : '000000';
    for (let i = 0; i < 3; i++) assert.equal((await submit(bad, nextCookie)).statusCode, 400);
    const last = await submit(bad, nextCookie);
    assert.equal(last.statusCode, 410);
    assert.match(last.body, /This sign-in has ended/);
    env.clock.advance(30_000);
    assert.equal((await submit(totpAt(secret, env.clock.now()), nextCookie)).statusCode, 410);
    // Without a cookie.
    assert.equal((await inject(env, { method: 'POST', url: '/magic/code', payload: 'code=123456', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode, 410);
  });

  test('OAUTH application: the POST opens the provider session and answers 303 to the login URL; SAML: a page', async (t) => {
    const env = await setup(t, kind);
    const oauth = await fixture(env, { type: 'OAUTH' });
    assert.equal((await generate(env, { username: oauth.username, applicationUuid: oauth.applicationUuid })).statusCode, 200);
    const link = await linkFor(env, oauth.email);
    const page = await inject(env, { method: 'GET', url: path(link) });
    assertLandingHeaders(page, "'self' https://rp.example.test");
    const landed = await inject(env, { method: 'POST', url: path(link) });
    assert.equal(landed.statusCode, 303, landed.body);
    assert.equal(landed.headers.location, 'https://rp.example.test/login');
    assert.ok([landed.headers['set-cookie']].flat().some((c) => String(c).includes('HttpOnly')), 'the provider session cookie is set');

    const saml = await fixture(env, { type: 'SAML' });
    assert.equal((await generate(env, { username: saml.username, applicationUuid: saml.applicationUuid, redirectUri: 'https://ignored.example.test/' })).statusCode, 200);
    const samlLink = await linkFor(env, saml.email);
    const samlPage = await inject(env, { method: 'POST', url: path(samlLink) });
    assert.equal(samlPage.statusCode, 200);
    // The form posting an unsolicited Response to the default ACS URL (the redirectUri given is ignored).
    assert.match(samlPage.body, /<form id="saml-post" method="post" action="https:\/\/sp\.example\.test\/acs">/);
    assert.match(samlPage.body, /<input type="hidden" name="SAMLResponse" value="[A-Za-z0-9+\/=]+">/);
    assert.match(samlPage.body, /<button type="submit">Continue<\/button>/);
    assertLandingHeaders(samlPage, "'self' https://sp.example.test");
  });

  test('generate validation: every row of the spec\'s tables', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    const oauth = await fixture(env, { type: 'OAUTH' });
    const base = { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL };
    const invalid = (message: string) => ({ status: 'ERROR', code: '400', message });
    const cases: [Record<string, unknown>, number, unknown][] = [
      [{ ...base, username: 'a' }, 400, invalid('username must be 2 to 100 characters')],
      [{ ...base, username: 'a'.repeat(101) }, 400, invalid('username must be 2 to 100 characters')],
      [{ ...base, username: undefined }, 400, invalid('username is required')],
      [{ ...base, username: 12 }, 400, invalid('username must be string')],
      [{ ...base, applicationUuid: undefined }, 400, invalid('applicationUuid is required')],
      [{ ...base, applicationUuid: 'not-a-uuid' }, 400, invalid('applicationUuid must be a UUID')],
      [{ ...base, applicationUuid: '7d3c5a0e-8f9b-4c2d-9e1f-0a1b2c3d4e5f' }, 404, NO_APP],
      [{ ...base, username: 'nobody-at-all' }, 404, NO_USER],
      [{ ...base, redirectUri: `https://app.example.test/${'x'.repeat(2030)}` }, 400, invalid('redirectUri must be at most 2048 characters')],
      [{ ...base, redirectUri: 'ftp://app.example.test/' }, 400, invalid('redirectUri must start with https:// or http://')],
      [{ ...base, redirectUri: 'https://app.example.test/a b' }, 400, invalid('redirectUri must not contain whitespace, semicolons or commas')],
      [{ ...base, redirectUri: 'https://app.example.test/a;b' }, 400, invalid('redirectUri must not contain whitespace, semicolons or commas')],
      [{ ...base, redirectUri: 'https://app.example.test/a,b' }, 400, invalid('redirectUri must not contain whitespace, semicolons or commas')],
      [{ ...base, redirectUri: undefined }, 400, invalid('redirectUri is required for JWT applications')],
      [{ ...base, redirectUri: 'https://app.example.test/elsewhere' }, 400, invalid('redirectUri must equal one of the application\'s returnUrls')],
      [{ ...base, expiryMinutes: 0 }, 400, invalid('expiryMinutes must be an integer from 1 to 43200')],
      [{ ...base, expiryMinutes: 43_201 }, 400, invalid('expiryMinutes must be an integer from 1 to 43200')],
      [{ ...base, expiryMinutes: 1.5 }, 400, invalid('expiryMinutes must be integer')],
      [{ ...base, expiryMinutes: '15' }, 400, invalid('expiryMinutes must be integer')],
      [{ username: oauth.username, applicationUuid: oauth.applicationUuid, redirectUri: 'https://rp.example.test/nope' }, 400,
        invalid('redirectUri must equal one of the application\'s loginUrls or redirectUris')],
    ];
    for (const [body, status, expected] of cases) {
      const response = await generate(env, body);
      assert.equal(response.statusCode, status, `${JSON.stringify(body).slice(0, 120)}: ${response.body}`);
      assert.deepEqual(response.json(), expected);
    }
    // Accepted edges: 100 characters is checked against users (none: 404), 43200 minutes, OAUTH targets.
    assert.equal((await generate(env, { ...base, username: 'a'.repeat(100) })).statusCode, 404);
    assert.equal((await generate(env, { ...base, username: 'ab' })).statusCode, 404);
    assert.equal((await generate(env, { ...base, expiryMinutes: 43_200 })).statusCode, 200);
    assert.equal((await generate(env, { ...base, redirectUri: 'https://app.example.test/other?x=1' })).statusCode, 200);
    for (const redirectUri of [undefined, 'https://rp.example.test/login2', 'https://rp.example.test/cb']) {
      assert.equal((await generate(env, { username: oauth.username, applicationUuid: oauth.applicationUuid, redirectUri })).statusCode, 200);
    }
    // The query of a return URL is kept; the id_token is added to it.
    const withQuery = await linkFor(env, f.email);
    const landed = await inject(env, { method: 'POST', url: path(withQuery) });
    assert.ok(String(landed.headers.location).startsWith('https://app.example.test/other?x=1&id_token='));

    // The revoke route's username rule.
    for (const username of ['a', 'a'.repeat(101)]) {
      const response = await env.admin.post('/admin/magiclink/revoke', { username });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), invalid('username must be 2 to 100 characters'));
    }
    assert.deepEqual((await env.admin.post('/admin/magiclink/revoke', {})).json(), invalid('username is required'));
    assert.equal((await generate(env, '{"username":')).statusCode, 400);
    assert.equal((await generate(env, '[]')).statusCode, 400);
  });

  test('the policy prerequisite: none, or PASSWORD first, is a 400 naming the policy', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    const { application } = await env.composition.services.applications.create(env.customer.customerId, { name: 'Bare', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
    const none = await generate(env, { username: f.username, applicationUuid: application.uuid, redirectUri: RETURN_URL });
    assert.equal(none.statusCode, 400);
    assert.deepEqual(none.json(), { status: 'ERROR', code: '400', message: 'policy is missing: no login policy of this application applies to the user; create one with firstFactor MAGIC_LINK' });
    const policy = await env.composition.services.policies.create(env.customer.customerId, { applicationUuid: application.uuid, firstFactor: 'PASSWORD' }, SYSTEM);
    const password = await generate(env, { username: f.username, applicationUuid: application.uuid, redirectUri: RETURN_URL });
    assert.equal(password.statusCode, 400);
    assert.deepEqual(password.json(), { status: 'ERROR', code: '400', message: `policy ${policy.id} applies to this user and application and its firstFactor is PASSWORD, not MAGIC_LINK` });
  });

  test('authentication: signature or bearer, per request; other customers are refused', async (t) => {
    const env = await setup(t, kind);
    const f = await fixture(env);
    const body = { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL };
    const unsigned = await env.identity.inject({ method: 'POST', url: '/api/admin/magiclink/generate', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    assert.equal(unsigned.statusCode, 401);
    assert.deepEqual(unsigned.json(), DENIED);

    const bearer = (token: string, url = '/api/admin/magiclink/generate', payload: unknown = body) => env.identity.inject({
      method: 'POST', url, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, payload: JSON.stringify(payload),
    });
    const token = await accessToken(env);
    const viaBearer = await bearer(token);
    assert.equal(viaBearer.statusCode, 200, viaBearer.body);
    assert.equal((await bearer(token, '/moas/api/admin/magiclink/generate')).statusCode, 200);
    assert.equal((await bearer(token, '/api/admin/magiclink/revoke', { username: f.username })).statusCode, 200);
    // Only on the magic-link routes.
    const elsewhere = await bearer(token, '/api/admin/users/getall', { customerKey: Number(env.customer.customerKey), batchSize: 10, batchNo: 1 });
    assert.equal(elsewhere.statusCode, 401);
    assert.deepEqual(elsewhere.json(), DENIED);
    for (const wrong of [`${token}x`, 'lkoa_abc', 'not a token', '']) {
      const refused = await bearer(wrong);
      assert.equal(refused.statusCode, 401, wrong);
      assert.deepEqual(refused.json(), DENIED);
    }

    // Customer B: its signature and its bearer token never reach A's users or applications.
    const other = await env.newCustomer();
    const bySignature = await generate(env, body, other.admin);
    assert.equal(bySignature.statusCode, 404);
    assert.deepEqual(bySignature.json(), NO_USER);
    const otherToken = await accessToken(env, other.customer.customerId);
    const byBearer = await bearer(otherToken);
    assert.equal(byBearer.statusCode, 404);
    assert.deepEqual(byBearer.json(), NO_USER);
    assert.deepEqual((await bearer(otherToken, '/api/admin/magiclink/revoke', { username: f.username })).json(), NO_INVITE);
    // B's own user with A's application: the application does not exist for B.
    const bUser = await other.admin.post('/admin/users/create', { customerKey: Number(other.customer.customerKey), username: f.username, email: `b-${f.email}`, firstName: 'B', lastName: 'User' });
    assert.equal(bUser.statusCode, 200, bUser.body);
    assert.deepEqual((await bearer(otherToken)).json(), NO_APP);
    // A signature of B with A's customerKey in the body is refused.
    assert.equal((await generate(env, { ...body, customerKey: Number(env.customer.customerKey) }, other.admin)).statusCode, 401);

    // Tokens expire after an hour.
    env.clock.advance(3_600_001);
    assert.equal((await bearer(token)).statusCode, 401);
  });
});

describeEachStore('magic-link landing: bad input', (kind) => {
  test('malformed requests get a 4xx page with the landing headers, never a 500', async (t) => {
    const env = await setup(t, kind);
    const token = randomBytes(32).toString('base64url');
    const cases: [InjectOptions, number][] = [
      [{ method: 'POST', url: `/magic/${token}`, headers: { 'content-type': 'application/json' }, payload: '{' }, 400],
      [{ method: 'POST', url: `/magic/${token}`, headers: { 'content-type': 'application/xml' }, payload: '<a/>' }, 415],
      [{ method: 'GET', url: `/magic/${'a'.repeat(99)}` }, 410],
      [{ method: 'POST', url: '/magic/code', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'code=%00' }, 400],
      [{ method: 'POST', url: '/magic/code', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'code=1&code=2' }, 410],
      [{ method: 'POST', url: `/magic/${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=%ZZ' }, 410],
    ];
    for (const [options, status] of cases) {
      const response = await inject(env, options);
      assert.equal(response.statusCode, status, `${options.method} ${options.url}: ${response.body}`);
      assert.match(String(response.headers['content-type']), /^text\/html/);
      assert.match(response.body, /<h1>/);
      assertLandingHeaders(response);
    }
    for (const line of env.logs) assert.ok(!line.includes(token), 'a log line holds the token');
    // Longer than the router takes: refused before routing, in the face's standard body.
    const long = await inject(env, { method: 'GET', url: `/magic/${'a'.repeat(300)}` });
    assert.equal(long.statusCode, 414);
  });
});

describeEachStore('POST /oauth/token', (kind) => {
  test('client credentials by Basic or form; RFC 6749 §5.1 and §5.2 bodies', async (t) => {
    const env = await setup(t, kind);
    const { client, clientSecret } = await env.composition.services.oauthClients.create(env.customer.customerId, { name: 'ci' }, SYSTEM);
    const basic = (id = client.clientId, secret = clientSecret) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const form = 'application/x-www-form-urlencoded';
    const post = (payload: string, headers: Record<string, string> = {}) => env.identity.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': form, ...headers }, payload });

    for (const response of [
      await post('grant_type=client_credentials', { authorization: basic() }),
      await post(`grant_type=client_credentials&scope=magiclink&client_id=${client.clientId}&client_secret=${clientSecret}`),
    ]) {
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['cache-control'], 'no-store');
      const body = response.json() as Record<string, unknown>;
      assert.match(String(body.access_token), /^lkoa_[A-Za-z0-9]+$/);
      assert.deepEqual(body, { access_token: body.access_token, token_type: 'Bearer', expires_in: 3600, scope: 'magiclink' });
    }

    const error = (error: string, error_description?: string) => ({ error, ...(error_description ? { error_description } : {}) });
    const cases: [string, Record<string, string>, number, string][] = [
      ['grant_type=client_credentials', {}, 401, 'invalid_client'],
      ['grant_type=client_credentials', { authorization: basic(client.clientId, `${clientSecret}x`) }, 401, 'invalid_client'],
      ['grant_type=client_credentials', { authorization: basic('7d3c5a0e-8f9b-4c2d-9e1f-0a1b2c3d4e5f') }, 401, 'invalid_client'],
      [`grant_type=client_credentials&client_id=${client.clientId}&client_secret=wrong`, {}, 401, 'invalid_client'],
      ['grant_type=client_credentials', { authorization: 'Bearer abc' }, 401, 'invalid_client'],
      [`grant_type=client_credentials&client_secret=${clientSecret}`, { authorization: basic() }, 400, 'invalid_request'],
      ['', { authorization: basic() }, 400, 'invalid_request'],
      ['grant_type=client_credentials&grant_type=client_credentials', { authorization: basic() }, 400, 'invalid_request'],
      ['grant_type=password&username=a&password=b', { authorization: basic() }, 400, 'unsupported_grant_type'],
      ['grant_type=client_credentials&scope=admin', { authorization: basic() }, 400, 'invalid_scope'],
      ['grant_type=client_credentials&scope=magiclink%20openid', { authorization: basic() }, 400, 'invalid_scope'],
      ['{"grant_type":"client_credentials"}', { authorization: basic(), 'content-type': 'application/json' }, 400, 'invalid_request'],
    ];
    for (const [payload, headers, status, code] of cases) {
      const response = await post(payload, headers);
      assert.equal(response.statusCode, status, `${payload} ${JSON.stringify(headers)}: ${response.body}`);
      assert.equal(response.headers['cache-control'], 'no-store');
      const body = response.json() as { error: string; error_description: string };
      assert.deepEqual(body, error(code, body.error_description));
      assert.equal(typeof body.error_description, 'string');
      if (status === 401) assert.match(String(response.headers['www-authenticate']), /^Basic realm="latchkey"/);
    }
    // A deleted client's tokens stop working.
    const token = (await post('grant_type=client_credentials', { authorization: basic() }).then((r) => r.json())).access_token as string;
    const revoke = (t: string) => env.identity.inject({
      method: 'POST', url: '/api/admin/magiclink/revoke', headers: { 'content-type': 'application/json', authorization: `Bearer ${t}` }, payload: JSON.stringify({ username: 'someone' }),
    });
    assert.equal((await revoke(token)).statusCode, 404);
    await env.composition.services.oauthClients.delete(env.customer.customerId, client.clientId, SYSTEM);
    assert.equal((await revoke(token)).statusCode, 401);
  });

  test('a body over the limit is 413 in the RFC 6749 §5.2 shape, as documented (issue 22 item 11)', async (t) => {
    const env = await setup(t, kind);
    const { client, clientSecret } = await env.composition.services.oauthClients.create(env.customer.customerId, { name: 'ci' }, SYSTEM);
    const basic = `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`;
    const form = 'application/x-www-form-urlencoded';
    const padded = `grant_type=client_credentials&pad=${'a'.repeat(300 * 1024)}`;
    for (const headers of [{ 'content-type': form, authorization: basic }, { 'content-type': form }, { 'content-type': 'application/json' }]) {
      const response = await env.identity.inject({ method: 'POST', url: '/oauth/token', headers, payload: padded });
      assert.equal(response.statusCode, 413, `${JSON.stringify(headers)}: ${response.body}`);
      assert.deepEqual(response.json(), { error: 'invalid_request', error_description: 'request body is too large' });
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.headers.connection, 'close');
    }
    // Just under the limit is read and answered as usual.
    const under = await env.identity.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': form, authorization: basic },
      payload: `grant_type=client_credentials&pad=${'a'.repeat(200 * 1024)}`,
    });
    assert.equal(under.statusCode, 200, under.body);
    // The route documents it.
    const doc = (await env.identity.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    assert.equal(doc.paths['/oauth/token'].post.responses['413'].content['application/json'].schema.required.join(), 'error,error_description');
  });
});
