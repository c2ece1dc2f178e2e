/**
 * The MFA service with a frozen test clock, on SQLite and PostgreSQL: the login factor
 * (checkLoginOtp), steps T-2..T+2, replay and concurrency, re-registration, and sealing.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../../src/audit/context.ts';
import { MfaFailed, NotFound } from '../../../src/lib/errors.ts';
import type { MfaService } from '../../../src/identity/mfa/service.ts';
import { totpAt } from '../../../src/identity/mfa/totp.ts';
import { build, type TestApp } from '../../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const START = Date.UTC(2026, 0, 15, 12, 0, 10);
const STEP_MS = 30_000;
const T = Math.floor(START / STEP_MS);

interface Fixture { app: TestApp; mfa: MfaService; customerId: number; userId: number }

async function setup(t: TestContext, kind: StoreKind): Promise<Fixture> {
  const app = await build(t, kind);
  app.clock.set(START);
  const customerId = app.customer.customerId;
  const user = await app.composition.services.users.create(customerId, { username: 'carol', email: 'carol@example.com', firstName: 'C', lastName: 'D', customAttributes: {} }, SYSTEM);
  return { app, mfa: app.composition.services.mfa, customerId, userId: user.id };
}

/** Registers and activates an authenticator at START; returns its secret. */
async function enrol(f: Fixture): Promise<string> {
  const { secret } = await f.mfa.register(f.customerId, { login: 'carol', customerDisplayName: 'Acme' });
  await f.mfa.validate(f.customerId, { login: 'carol', secret, otp: totpAt(secret, START) }, SYSTEM);
  return secret;
}

const refusal = (reason: MfaFailed['reason']) => (error: unknown) => {
  assert.ok(error instanceof MfaFailed, String(error));
  assert.equal(error.reason, reason);
  return true;
};

describeEachStore('MFA service', (kind) => {
  test('checkLoginOtp is a no-op without an active authenticator, even with a registration pending', async (t) => {
    const f = await setup(t, kind);
    await f.mfa.checkLoginOtp(f.customerId, f.userId, undefined);
    await f.mfa.register(f.customerId, { login: 'carol', customerDisplayName: 'Acme' });
    await f.mfa.checkLoginOtp(f.customerId, f.userId, undefined);
    await f.mfa.checkLoginOtp(f.customerId, f.userId, 'garbage');
    assert.equal(await f.mfa.hasActiveAuthenticator(f.customerId, f.userId), false);
  });

  test('checkLoginOtp with an active authenticator: required, checked, used once, never backwards', async (t) => {
    const f = await setup(t, kind);
    const secret = await enrol(f);
    assert.equal(await f.mfa.hasActiveAuthenticator(f.customerId, f.userId), true);
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, undefined), refusal('otp_required'));
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, ''), refusal('otp_required'));
    // The registration's code was used by the validation: it cannot log in.
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(secret, START)), refusal('replayed'));
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, '12345'), refusal('wrong_code'));
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, '1234567'), refusal('wrong_code'));
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, 123456 as unknown as string), refusal('wrong_code'));

    f.app.clock.advance(STEP_MS);
    const next = totpAt(secret, f.app.clock.now());
    await f.mfa.checkLoginOtp(f.customerId, f.userId, next);
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, next), refusal('replayed'));
    // Still within ±1 step, but older than the last accepted code (RFC 6238 §5.2).
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(secret, START)), refusal('replayed'));
    await f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(secret, f.app.clock.now() + STEP_MS));
  });

  test('frozen clock at step T: codes for T-2 and T+2 are wrong, T-1..T+1 are accepted', async (t) => {
    const f = await setup(t, kind);
    const secret = await enrol(f);
    // Enrolment used step T; move on so that T-1..T+1 around the new "now" are all unused.
    f.app.clock.set(START + 10 * STEP_MS);
    const now = f.app.clock.now();
    for (const offset of [-2, 2]) {
      await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(secret, now + offset * STEP_MS)), refusal('wrong_code'), `step ${offset}`);
    }
    // In increasing order: each accepted step must be later than the last.
    for (const offset of [-1, 0, 1]) await f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(secret, now + offset * STEP_MS));
  });

  test('validate accepts T-1..T+1 and refuses T-2, T+2 (fresh registration each time)', async (t) => {
    const f = await setup(t, kind);
    for (const offset of [-2, -1, 0, 1, 2]) {
      const { secret } = await f.mfa.register(f.customerId, { login: 'carol', customerDisplayName: 'Acme' });
      const attempt = f.mfa.validate(f.customerId, { login: 'carol', secret, otp: totpAt(secret, START + offset * STEP_MS) }, SYSTEM);
      if (Math.abs(offset) === 2) await assert.rejects(attempt, refusal('wrong_code'), `step ${offset}`);
      else assert.deepEqual(await attempt, { userId: f.userId });
    }
    assert.equal(T, Math.floor(START / STEP_MS));
  });

  test('concurrent logins with the same code: exactly one succeeds', async (t) => {
    const f = await setup(t, kind);
    const secret = await enrol(f);
    f.app.clock.advance(STEP_MS);
    const code = totpAt(secret, f.app.clock.now());
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => f.mfa.checkLoginOtp(f.customerId, f.userId, code)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') refusal('replayed')(r.reason);
  });

  test('a new registration leaves the active authenticator working until it is validated', async (t) => {
    const f = await setup(t, kind);
    const oldSecret = await enrol(f);
    const { secret: newSecret } = await f.mfa.register(f.customerId, { login: 'carol', customerDisplayName: 'Acme' });
    f.app.clock.advance(STEP_MS);
    await f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(oldSecret, f.app.clock.now()));
    await f.mfa.validate(f.customerId, { login: 'carol', secret: newSecret, otp: totpAt(newSecret, f.app.clock.now()) }, SYSTEM);
    f.app.clock.advance(STEP_MS);
    await assert.rejects(f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(oldSecret, f.app.clock.now())), refusal('wrong_code'));
    await f.mfa.checkLoginOtp(f.customerId, f.userId, totpAt(newSecret, f.app.clock.now()));
  });

  test('the login factor belongs to the user\'s customer, and reset removes it', async (t) => {
    const f = await setup(t, kind);
    const secret = await enrol(f);
    const other = await f.app.newCustomer();
    await assert.rejects(f.mfa.register(other.customer.customerId, { login: 'carol', customerDisplayName: 'X' }), NotFound);
    assert.equal(await f.mfa.hasActiveAuthenticator(other.customer.customerId, f.userId), false);
    assert.deepEqual(await f.mfa.reset(f.customerId, 'carol', SYSTEM), { userId: f.userId, removed: true });
    await f.mfa.checkLoginOtp(f.customerId, f.userId, undefined);
    assert.equal((await f.app.composition.services.users.findById(f.customerId, f.userId))?.secondFactorType, 'NONE');
    await assert.rejects(f.mfa.validate(f.customerId, { login: 'carol', secret, otp: totpAt(secret, START) }, SYSTEM), refusal('no_pending'));
  });

  test('a sealed secret copied onto another user\'s row does not open', async (t) => {
    const f = await setup(t, kind);
    const { secret } = await f.mfa.register(f.customerId, { login: 'carol', customerDisplayName: 'Acme' });
    const dave = await f.app.composition.services.users.create(f.customerId, { username: 'dave', email: 'dave@example.com', firstName: 'D', lastName: 'E', customAttributes: {} }, SYSTEM);
    await f.mfa.register(f.customerId, { login: 'dave', customerDisplayName: 'Acme' });
    const { db } = f.app.composition.store;
    const carolRow = await db.selectFrom('mfa_authenticators').selectAll().where('user_id', '=', f.userId).executeTakeFirstOrThrow();
    await db.updateTable('mfa_authenticators').set({ pending_secret_sealed: carolRow.pending_secret_sealed }).where('user_id', '=', dave.id).execute();
    await assert.rejects(f.mfa.validate(f.customerId, { login: 'dave', secret, otp: totpAt(secret, START) }, SYSTEM), (error: Error) => !(error instanceof MfaFailed));
  });

  test('labels too long for a QR code are refused before anything is stored', async (t) => {
    const f = await setup(t, kind);
    await assert.rejects(
      f.mfa.register(f.customerId, { login: 'carol', authenticatorName: '\u{1F510}'.repeat(100), customerDisplayName: 'Acme' }),
      (error: Error) => error.message === 'authenticatorName is too long to fit in a QR code',
    );
    const row = await f.app.composition.store.db.selectFrom('mfa_authenticators').selectAll().where('user_id', '=', f.userId).executeTakeFirst();
    assert.equal(row, undefined);
  });
});
