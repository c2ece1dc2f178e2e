/**
 * Black-box suite of the authenticator-app API (spec: Authenticator-app MFA; DESIGN: Authenticator app
 * (TOTP)) through the signed client, on SQLite and PostgreSQL, with a frozen clock. Bodies asserted whole.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { compose } from '../../../src/compose/index.ts';
import { loadConfig } from '../../../src/config.ts';
import { buildOtpauthUri, generateTotpSecret, totpAt } from '../../../src/identity/mfa/totp.ts';
import { MAX_FAILED_ATTEMPTS } from '../../../src/identity/mfa/types.ts';
import { createTestClock } from '../../../src/lib/clock.ts';
import { adminClient, build, testEnv, type TestApp } from '../../helpers/app.ts';
import { describeEachStore, openTestStore, postgresStore, postgresUrl, type StoreKind } from '../../helpers/stores.ts';
import { json } from '../../helpers/http.ts';

const jsQR = jsQRModule.default;

// Open the shared PostgreSQL schema outside any test: postgresStore() registers its closing
// `after` hook on whatever test first calls it, which would close the store after that test.
if (postgresUrl) await postgresStore();

// A step boundary plus 10 s: moving ±30 s lands one step either side, still inside that step.
const START = Date.UTC(2026, 0, 15, 12, 0, 10);
const STEP_MS = 30_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const GA = 'GOOGLE AUTHENTICATOR';
const REGISTER_MESSAGE = 'Scan the QR code with the authenticator app, then validate a code from it.';
const VALIDATED = 'Authenticator app registered successfully.';
const failed = (message: string) => ({ status: 'FAILED', message });
const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const WRONG = failed('The one-time code is incorrect.');
const WRONG_NOW_LOCKED = failed('The one-time code is incorrect. After 5 failed attempts this registration is locked: start a new registration.');
const LOCKED = failed('This registration is locked after 5 failed attempts: start a new registration.');
const NO_PENDING = failed('No authenticator registration is pending for this user: start one first.');
const MISMATCH = failed('The secret does not match the pending registration.');
const REPLAYED = failed('This one-time code has already been used: wait for the next code.');
const NOT_FOUND = failed('Invalid username or email.');

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  app.clock.set(START);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

async function createUser(app: App, username = 'alice', email = `${username}@example.com`): Promise<number> {
  const body = json(await app.admin.post('/admin/users/create', { customerKey: app.ck, username, email, firstName: 'A', lastName: 'B' }), 200);
  return body.userId;
}

function decodeQr(base64: string): string | undefined {
  const png = PNG.sync.read(Buffer.from(base64, 'base64'));
  return jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height)?.data;
}

/** Starts a registration and checks the whole success body; returns the secret. */
async function register(app: App, username = 'alice', extra: Record<string, unknown> = {}): Promise<{ secret: string; body: any; res: LightMyRequestResponse }> {
  const res = await app.admin.post('/auth/google-auth-secret', { customerKey: app.ck, username, authenticatorType: GA, ...extra });
  const body = json(res, 200);
  assert.match(body.txID, UUID);
  assert.match(body.secret, /^[A-Z2-7]{32}$/);
  assert.match(body.qrCodeData, /^[A-Za-z0-9+/]+={0,2}$/);
  assert.deepEqual(body, {
    txID: body.txID, responseType: 'GOOGLE_AUTHENTICATOR', status: 'SUCCESS', message: REGISTER_MESSAGE,
    qrCodeData: body.qrCodeData, secret: body.secret,
  });
  return { secret: body.secret, body, res };
}

function validate(app: App, fields: { username?: string; secret: string; otpToken: unknown } & Record<string, unknown>) {
  return app.admin.post('/auth/validate-google-auth-secret', { customerKey: app.ck, username: 'alice', authenticatorType: GA, ...fields });
}

function assertValidated(res: LightMyRequestResponse): void {
  const body = json(res, 200);
  assert.match(body.txID, UUID);
  assert.deepEqual(body, { txID: body.txID, responseType: 'GOOGLE_AUTHENTICATOR', status: 'SUCCESS', message: VALIDATED });
}

async function secondFactor(app: App, username = 'alice'): Promise<{ authType: string; secondFactorAuthType: string }> {
  const body = json(await app.admin.post('/admin/users/get', { customerKey: app.ck, username }), 200);
  return { authType: body.authType, secondFactorAuthType: body.users[0].secondFactorAuthType };
}

/** The user's authenticator row as stored, to prove that bad input changes nothing. */
async function storedRow(app: App, userId: number) {
  return app.composition.store.db.selectFrom('mfa_authenticators').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

describeEachStore('authenticator-app MFA API', (kind) => {
  test('register → scan → validate: the second factor reads GOOGLE AUTHENTICATOR', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    assert.deepEqual(await secondFactor(app), { authType: 'NONE', secondFactorAuthType: 'NONE' });

    const { body, res } = await register(app);
    assert.equal(res.headers['cache-control'], 'no-store');
    // What the app does: decode the QR, read the URI, compute the current code from its secret.
    const uri = decodeQr(body.qrCodeData);
    assert.equal(uri, buildOtpauthUri({ issuer: 'example.test', account: 'alice', secret: body.secret }));
    assert.equal(uri, `otpauth://totp/example.test:alice?secret=${body.secret}&issuer=example.test&algorithm=SHA1&digits=6&period=30`);
    const fromUri = new URL(uri!).searchParams.get('secret')!;

    assertValidated(await validate(app, { secret: body.secret, otpToken: totpAt(fromUri, app.clock.now()) }));
    assert.deepEqual(await secondFactor(app), { authType: GA, secondFactorAuthType: GA });
  });

  test('authenticatorName is the issuer; authenticatorType may be omitted on registration; also under /moas/api', async (t) => {
    const app = await setup(t, kind);
    await createUser(app, 'bob', 'bob@example.com');
    const { body } = await register(app, 'bob', { authenticatorType: undefined, authenticatorName: 'Acme VPN', registrationType: 'anything', questionAnswerList: [{ q: 1 }] });
    assert.equal(decodeQr(body.qrCodeData), buildOtpauthUri({ issuer: 'Acme VPN', account: 'bob', secret: body.secret }));

    // The e-mail finds the user too; the account label stays the username.
    const moas = await app.identity.inject({
      method: 'POST', url: '/moas/api/auth/google-auth-secret',
      headers: { 'content-type': 'application/json', ...app.admin.headers() },
      payload: JSON.stringify({ customerKey: String(app.ck), username: 'BOB@example.com', authenticatorName: '' }),
    });
    const moasBody = json(moas, 200);
    assert.equal(decodeQr(moasBody.qrCodeData), buildOtpauthUri({ issuer: 'example.test', account: 'bob', secret: moasBody.secret }));
    // The later registration replaced the earlier one.
    assert.deepEqual(json(await validate(app, { username: 'bob', secret: body.secret, otpToken: totpAt(body.secret, START) }), 400), MISMATCH);
    assertValidated(await validate(app, { username: 'bob', secret: moasBody.secret, otpToken: totpAt(moasBody.secret, START) }));
  });

  test('a code is accepted once: the same code again is refused as replayed', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const { secret } = await register(app);
    const otpToken = totpAt(secret, START);
    assertValidated(await validate(app, { secret, otpToken }));
    assert.deepEqual(json(await validate(app, { secret, otpToken }), 400), REPLAYED);
    // A fresh code is still not a second validation: nothing is pending.
    app.clock.advance(STEP_MS);
    assert.deepEqual(json(await validate(app, { secret, otpToken: totpAt(secret, app.clock.now()) }), 400), NO_PENDING);
  });

  test('concurrent submissions of the same code: exactly one succeeds', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const { secret } = await register(app);
    const otpToken = totpAt(secret, START);
    // As many as the registration's attempt budget: one more concurrent one may find the budget
    // reserved by the others and be refused as locked, which is right but not what this test is about.
    const results = await Promise.all(Array.from({ length: MAX_FAILED_ATTEMPTS }, () => validate(app, { secret, otpToken })));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => r.body).join('\n'));
    assertValidated(ok[0]);
    for (const r of results.filter((x) => x.statusCode !== 200)) assert.deepEqual(json(r, 400), REPLAYED);
    assert.deepEqual(await secondFactor(app), { authType: GA, secondFactorAuthType: GA });
  });

  test('5 failed validations lock the registration until a new one is started', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const { secret } = await register(app);
    const right = totpAt(secret, START);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 4; i++) assert.deepEqual(json(await validate(app, { secret, otpToken: wrong }), 400), WRONG);
    assert.deepEqual(json(await validate(app, { secret, otpToken: wrong }), 400), WRONG_NOW_LOCKED);
    assert.deepEqual(json(await validate(app, { secret, otpToken: right }), 400), LOCKED);
    assert.deepEqual(await secondFactor(app), { authType: 'NONE', secondFactorAuthType: 'NONE' });

    const again = await register(app);
    assert.notEqual(again.secret, secret);
    assertValidated(await validate(app, { secret: again.secret, otpToken: totpAt(again.secret, START) }));
  });

  test('concurrent wrong codes are all counted, and never more than 5', async (t) => {
    const app = await setup(t, kind);
    const userId = await createUser(app);
    const { secret } = await register(app);
    const right = totpAt(secret, START);
    const wrong = String((Number(right) + 7) % 1_000_000).padStart(6, '0');
    const results = await Promise.all(Array.from({ length: 8 }, () => validate(app, { secret, otpToken: wrong })));
    const bodies = results.map((r) => json(r, 400));
    const count = (expected: object) => bodies.filter((b) => JSON.stringify(b) === JSON.stringify(expected)).length;
    assert.deepEqual([count(WRONG), count(WRONG_NOW_LOCKED), count(LOCKED)], [4, 1, 3], JSON.stringify(bodies));
    assert.equal((await storedRow(app, userId))?.failed_attempts, 5);
    assert.deepEqual(json(await validate(app, { secret, otpToken: right }), 400), LOCKED);
  });

  test('one step of drift either side is accepted, two are not (RFC 6238 §5.2)', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    for (const offset of [-2, 2]) {
      const { secret } = await register(app);
      assert.deepEqual(json(await validate(app, { secret, otpToken: totpAt(secret, START + offset * STEP_MS) }), 400), WRONG, `step ${offset}`);
    }
    for (const offset of [-1, 1, 0]) {
      const { secret } = await register(app);
      assertValidated(await validate(app, { secret, otpToken: totpAt(secret, START + offset * STEP_MS) }));
    }
  });

  test('a secret that is not the pending one is refused without spending an attempt; case and spaces do not matter', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const { secret } = await register(app);
    const otpToken = totpAt(secret, START);
    for (let i = 0; i < 6; i++) assert.deepEqual(json(await validate(app, { secret: generateTotpSecret(), otpToken }), 400), MISMATCH);
    const grouped = secret.toLowerCase().match(/.{4}/g)!.join(' ');
    assertValidated(await validate(app, { secret: grouped, otpToken }));
  });

  test('validation without a registration: no pending registration', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const secret = generateTotpSecret();
    assert.deepEqual(json(await validate(app, { secret, otpToken: totpAt(secret, START) }), 400), NO_PENDING);
  });

  test('bad input is a 400 naming the field and changes nothing', async (t) => {
    const app = await setup(t, kind);
    const userId = await createUser(app);
    const { secret } = await register(app);
    const code = totpAt(secret, START);
    const before = await storedRow(app, userId);
    const cases: [Record<string, unknown>, string][] = [
      [{ secret, otpToken: code + '1' }, 'otpToken must be a 6-digit code'],
      [{ secret, otpToken: code.slice(1) }, 'otpToken must be a 6-digit code'],
      [{ secret, otpToken: ` ${code.slice(1)}` }, 'otpToken must be a 6-digit code'],
      [{ secret, otpToken: Number(code) }, 'otpToken must be string'],
      [{ secret, otpToken: undefined }, 'otpToken is required'],
      [{ secret: undefined, otpToken: code }, 'secret is required'],
      [{ secret: 42, otpToken: code }, 'secret must be string'],
      [{ secret, otpToken: code, authenticatorType: undefined }, 'authenticatorType is required'],
      [{ secret, otpToken: code, authenticatorType: 'SMS' }, 'authenticatorType must be equal to one of the allowed values'],
      [{ secret, otpToken: code, username: 7 }, 'username must be string'],
    ];
    for (const [fields, message] of cases) assert.deepEqual(json(await validate(app, fields as never), 400), validation(message), message);
    const badRegistrations: [Record<string, unknown>, string][] = [
      [{ authenticatorType: 'google authenticator' }, 'authenticatorType must be equal to one of the allowed values'],
      [{ authenticatorName: 12 }, 'authenticatorName must be string'],
      [{ authenticatorName: 'x'.repeat(101) }, 'authenticatorName must NOT have more than 100 characters'],
      [{ questionAnswerList: 'no' }, 'questionAnswerList must be array'],
      [{ username: undefined }, 'username is required'],
    ];
    for (const [fields, message] of badRegistrations) {
      const res = await app.admin.post('/auth/google-auth-secret', { customerKey: app.ck, username: 'alice', ...fields });
      assert.deepEqual(json(res, 400), validation(message), message);
    }
    assert.deepEqual(await storedRow(app, userId), before);
    // The registration is untouched: its first attempt still succeeds.
    assertValidated(await validate(app, { secret, otpToken: code }));
  });

  test('unknown users and other customers\' users are 404 and nothing is stored', async (t) => {
    const app = await setup(t, kind);
    const userId = await createUser(app);
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    for (const [admin, ck, username] of [[app.admin, app.ck, 'nobody'], [other.admin, otherCk, 'alice']] as const) {
      const register = await admin.post('/auth/google-auth-secret', { customerKey: ck, username, authenticatorType: GA });
      assert.deepEqual(json(register, 404), NOT_FOUND);
      const secret = generateTotpSecret();
      const check = await admin.post('/auth/validate-google-auth-secret', { customerKey: ck, username, authenticatorType: GA, secret, otpToken: totpAt(secret, START) });
      assert.deepEqual(json(check, 404), NOT_FOUND);
      assert.deepEqual(json(await admin.post('/admin/users/mfa/reset', { customerKey: ck, username }), 404), NOT_FOUND);
    }
    assert.equal(await storedRow(app, userId), undefined);
  });

  test('another customer cannot validate or reset this customer\'s registration', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const { secret } = await register(app);
    const other = await app.newCustomer();
    const otherCk = Number(other.customer.customerKey);
    await other.admin.post('/admin/users/create', { customerKey: otherCk, username: 'alice', email: 'alice@example.com', firstName: 'A', lastName: 'B' });
    // Same username in the other tenant: its own (empty) state, never this one's.
    const check = await other.admin.post('/auth/validate-google-auth-secret', { customerKey: otherCk, username: 'alice', authenticatorType: GA, secret, otpToken: totpAt(secret, START) });
    assert.deepEqual(json(check, 400), NO_PENDING);
    assertValidated(await validate(app, { secret, otpToken: totpAt(secret, START) }));
  });

  test('a signature failure is the standard 401', async (t) => {
    const app = await setup(t, kind);
    await createUser(app);
    const res = await app.admin.post('/auth/google-auth-secret', { customerKey: app.ck, username: 'alice' }, { headers: { authorization: 'f'.repeat(128) } });
    assert.deepEqual(json(res, 401), { status: 'ERROR', code: '401', message: 'API Request denied: Incorrect Authorization header.' });
  });

  test('reset removes the authenticator; the user can register again', async (t) => {
    const app = await setup(t, kind);
    const userId = await createUser(app);
    const { secret } = await register(app);
    assertValidated(await validate(app, { secret, otpToken: totpAt(secret, START) }));

    const reset = await app.admin.post('/admin/users/mfa/reset', { customerKey: app.ck, username: 'alice' });
    assert.deepEqual(json(reset, 200), { customerId: app.customer.customerId, status: 'SUCCESS', message: 'Authenticator app removed.' });
    assert.deepEqual(await secondFactor(app), { authType: 'NONE', secondFactorAuthType: 'NONE' });
    assert.equal(await storedRow(app, userId), undefined);
    assert.deepEqual(await app.composition.services.mfa.checkLoginOtp(app.customer.customerId, userId, undefined), undefined);

    const again = await app.admin.post('/admin/users/mfa/reset', { customerKey: app.ck, username: 'alice' });
    assert.deepEqual(json(again, 200), { customerId: app.customer.customerId, status: 'SUCCESS', message: 'The user had no authenticator app.' });

    // Re-enrolment in the same time step works: replay is tracked per secret, and this secret is new.
    const next = await register(app);
    assertValidated(await validate(app, { secret: next.secret, otpToken: totpAt(next.secret, START) }));
    assert.deepEqual(await secondFactor(app), { authType: GA, secondFactorAuthType: GA });
  });

  test('secrets are sealed at rest and appear in no other response', async (t) => {
    const app = await setup(t, kind);
    const userId = await createUser(app);
    const { secret } = await register(app);
    const pending = await storedRow(app, userId);
    assert.ok(pending?.pending_secret_sealed?.startsWith('v1.'));
    assert.ok(!JSON.stringify(pending).includes(secret));
    const res = await validate(app, { secret, otpToken: totpAt(secret, START) });
    assertValidated(res);
    const active = await storedRow(app, userId);
    assert.ok(active?.active_secret_sealed?.startsWith('v1.'));
    assert.equal(active?.pending_secret_sealed, null);
    assert.ok(!JSON.stringify(active).includes(secret));
    const user = await app.admin.post('/admin/users/get', { customerKey: app.ck, username: 'alice' });
    for (const body of [res.body, user.body]) assert.ok(!body.includes(secret));
  });

  test('logs carry the transaction id and the failed check, never a secret or a code', async (t) => {
    const lines: string[] = [];
    const clock = createTestClock(START);
    const { store, owned } = await openTestStore(kind);
    const composition = await compose(loadConfig(testEnv({ LATCHKEY_LOG_LEVEL: 'info' })), { clock, store, logStream: { write: (line) => { lines.push(line); } } });
    const identity = await composition.buildIdentityApp();
    t.after(async () => {
      await identity.close();
      await composition.close();
      if (owned) await store.close();
    });
    const customer = await composition.services.customers.create({ email: `logs-${Date.now()}-${Math.random()}@example.test` });
    const app = Object.assign({ admin: adminClient(identity, customer, clock), ck: Number(customer.customerKey) }) as App;
    await createUser(app);
    const { secret, body } = await register(app);
    const right = totpAt(secret, START);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    assert.deepEqual(json(await validate(app, { secret, otpToken: wrong }), 400), WRONG);
    assertValidated(await validate(app, { secret, otpToken: right }));

    const log = lines.join('');
    for (const value of [secret, right, wrong, body.qrCodeData.slice(-60)]) assert.ok(!log.includes(value), 'a secret or code was logged');
    const records = lines.map((line) => JSON.parse(line));
    assert.ok(records.some((r) => r.msg === 'authenticator registration started' && r.txID === body.txID));
    assert.ok(records.some((r) => r.msg === 'authenticator validation refused' && r.reason === 'wrong_code' && typeof r.txID === 'string'));
    assert.ok(records.some((r) => r.msg === 'authenticator registered'));
  });
});
