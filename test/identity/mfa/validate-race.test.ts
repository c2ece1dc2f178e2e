/**
 * Issue 13 item 2 for the authenticator registration: concurrent wrong codes on
 * POST /api/auth/validate-google-auth-secret get at most 5 code checks (each attempt is counted
 * before its code is checked), counted through the service's code-check dependency, on both stores.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { SYSTEM } from '../../../src/audit/context.ts';
import { createAdminAuthenticator } from '../../../src/identity/admin-auth.ts';
import { buildIdentityApp } from '../../../src/identity/app.ts';
import { mfaArea } from '../../../src/identity/mfa/routes.ts';
import { createMfaService } from '../../../src/identity/mfa/service.ts';
import { totpAt, verifyTotp } from '../../../src/identity/mfa/totp.ts';
import { createSealer } from '../../../src/lib/seal.ts';
import { adminClient, build, type AdminClient, type TestApp } from '../../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const GUESSES = 30;
const BUDGET = 5;
const GA = 'GOOGLE AUTHENTICATOR';
const WRONG = { status: 'FAILED', message: 'The one-time code is incorrect.' };
const WRONG_NOW_LOCKED = { status: 'FAILED', message: 'The one-time code is incorrect. After 5 failed attempts this registration is locked: start a new registration.' };
const LOCKED = { status: 'FAILED', message: 'This registration is locked after 5 failed attempts: start a new registration.' };

interface Fixture {
  app: TestApp;
  admin: AdminClient;
  ck: number;
  checks(): number;
  /** Holds every user lookup until `n` requests have made one, so they all race past it together. */
  gather(n: number): void;
}

/** Resolves the n-th caller and all before it together (then lets everyone through). */
function barrier(n: number): () => Promise<void> {
  const waiting: (() => void)[] = [];
  return () => new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (waiting.length >= n) for (const release of waiting) release();
  });
}

/** The identity face over the test's composition, with an MFA service that counts the codes it checks. */
async function setup(t: TestContext, kind: StoreKind): Promise<Fixture> {
  const app = await build(t, kind);
  const { config, clock, store, masterKey, services } = app.composition;
  let checks = 0;
  let gate: (() => Promise<void>) | undefined;
  const users = {
    ...services.users,
    findByLogin: async (customerId: number, login: string) => {
      await gate?.();
      return services.users.findByLogin(customerId, login);
    },
  };
  const mfa = createMfaService({
    db: store.db, clock, sealer: createSealer(masterKey), users, audit: services.audit,
    verifyCode: (secret, code, now) => { checks++; return verifyTotp(secret, code, now); },
  });
  const identity: FastifyInstance = await buildIdentityApp({
    logLevel: 'silent', publicUrl: 'http://127.0.0.1:8080', ping: async () => {},
    authenticator: createAdminAuthenticator({ customers: services.customers, clock, clockSkewMs: config.admin.clockSkewMs, replayGuard: undefined }),
    users: services.users, groups: services.groups, areas: [mfaArea(mfa)],
  });
  t.after(() => identity.close());
  return {
    app, admin: adminClient(identity, app.customer, app.clock), ck: Number(app.customer.customerKey),
    checks: () => checks,
    gather: (n) => { gate = barrier(n); },
  };
}

describeEachStore('authenticator validation: concurrent guesses', (kind) => {
  test(`${GUESSES} concurrent wrong codes: at most ${BUDGET} checked, the rest refused as locked`, async (t) => {
    const f = await setup(t, kind);
    await f.app.composition.services.users.create(f.app.customer.customerId, { username: 'alice', email: 'alice@example.com', firstName: 'A', lastName: 'B', customAttributes: {} }, SYSTEM);
    const registered = await f.admin.post('/auth/google-auth-secret', { customerKey: f.ck, username: 'alice', authenticatorType: GA });
    assert.equal(registered.statusCode, 200, registered.body);
    const { secret } = registered.json();
    const right = Number(totpAt(secret, f.app.clock.now()));
    // Codes far from the current ones (equal to a valid one only by a one-in-a-million chance).
    f.gather(GUESSES);
    const results: LightMyRequestResponse[] = await Promise.all(Array.from({ length: GUESSES }, (_, i) => f.admin.post('/auth/validate-google-auth-secret', {
      customerKey: f.ck, username: 'alice', authenticatorType: GA, secret, otpToken: String((right + 500_000 + i) % 1_000_000).padStart(6, '0'),
    })));
    const bodies = results.map((r) => { assert.equal(r.statusCode, 400, r.body); return JSON.stringify(r.json()); });
    const count = (body: object) => bodies.filter((b) => b === JSON.stringify(body)).length;
    assert.deepEqual([count(WRONG), count(WRONG_NOW_LOCKED), count(LOCKED)], [BUDGET - 1, 1, GUESSES - BUDGET], bodies.join('\n'));
    assert.equal(f.checks(), BUDGET, 'codes checked');
    f.gather(1);
    // The right code now: refused unchecked.
    const late = await f.admin.post('/auth/validate-google-auth-secret', { customerKey: f.ck, username: 'alice', authenticatorType: GA, secret, otpToken: totpAt(secret, f.app.clock.now()) });
    assert.deepEqual(late.json(), LOCKED);
    assert.equal(f.checks(), BUDGET);
  });

  test('a right code among concurrent wrong ones within the budget is accepted and resets the count', async (t) => {
    const f = await setup(t, kind);
    await f.app.composition.services.users.create(f.app.customer.customerId, { username: 'alice', email: 'alice@example.com', firstName: 'A', lastName: 'B', customAttributes: {} }, SYSTEM);
    const { secret } = (await f.admin.post('/auth/google-auth-secret', { customerKey: f.ck, username: 'alice', authenticatorType: GA })).json();
    const right = totpAt(secret, f.app.clock.now());
    const wrong = String((Number(right) + 500_000) % 1_000_000).padStart(6, '0');
    const codes = [wrong, wrong, right, wrong];
    const results = await Promise.all(codes.map((otpToken) => f.admin.post('/auth/validate-google-auth-secret', { customerKey: f.ck, username: 'alice', authenticatorType: GA, secret, otpToken })));
    assert.equal(results[2].statusCode, 200, results[2].body);
    const row = await f.app.composition.store.db.selectFrom('mfa_authenticators').select(['failed_attempts', 'pending_secret_sealed'])
      .where('customer_id', '=', f.app.customer.customerId).executeTakeFirstOrThrow();
    assert.deepEqual(row, { failed_attempts: 0, pending_secret_sealed: null });
    assert.equal(f.checks(), codes.length);
  });
});
