/**
 * The authenticator-app second factor (RFC 6238, DESIGN "Authenticator app (TOTP)"): start a
 * registration, validate it against the stored pending secret, reset it, and check a login code.
 * Secrets are sealed at rest; a code is accepted once per user; 5 failures lock a registration, each
 * attempt counted before its code is checked. Login codes are limited by the login throttle of the
 * caller (the token endpoint reserves an attempt before the password and the code are checked).
 */
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, MfaFailed, UserNotFound } from '../../lib/errors.ts';
import type { Sealer } from '../../lib/seal.ts';
import { safeEqual } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import type { UsersService } from '../users/service.ts';
import type { User } from '../users/types.ts';
import { renderQrPngBase64 } from './qr.ts';
import * as repo from './repo.ts';
import { buildOtpauthUri, generateTotpSecret, verifyTotp } from './totp.ts';
import { GOOGLE_AUTHENTICATOR, MAX_FAILED_ATTEMPTS, NO_SECOND_FACTOR, type Registration } from './types.ts';

/** Byte capacity of the largest QR code (version 40) at error correction level M. */
const QR_MAX_BYTES = 2331;

export const MFA_MESSAGES = {
  wrong_code: 'The one-time code is incorrect.',
  wrong_code_now_locked: `The one-time code is incorrect. After ${MAX_FAILED_ATTEMPTS} failed attempts this registration is locked: start a new registration.`,
  no_pending: 'No authenticator registration is pending for this user: start one first.',
  locked: `This registration is locked after ${MAX_FAILED_ATTEMPTS} failed attempts: start a new registration.`,
  secret_mismatch: 'The secret does not match the pending registration.',
  replayed: 'This one-time code has already been used: wait for the next code.',
  otp_required: 'A one-time code from the authenticator app is required.',
} as const;

export interface RegisterInput {
  /** Username or primary e-mail of the user. */
  login: string;
  /** Issuer label shown in the app; empty or absent: `customerDisplayName`. */
  authenticatorName?: string;
  customerDisplayName: string;
}

export interface ValidateInput {
  login: string;
  /** The secret the client was given at registration (case, spaces and `=` padding are ignored). */
  secret: string;
  otp: string;
}

export interface MfaService {
  /**
   * Starts a registration: a fresh 160-bit secret kept as the user's pending one (an active
   * authenticator keeps working until the new one is validated).
   * @throws NotFound (user), Invalid (the labels do not fit in a QR code)
   */
  register(customerId: number, input: RegisterInput): Promise<Registration>;
  /**
   * Checks a code against the stored pending secret (±1 step); on success it becomes the active
   * secret and the user's second factor reads GOOGLE AUTHENTICATOR.
   * @throws NotFound (user); MfaFailed no_pending | locked | secret_mismatch | wrong_code | replayed
   */
  validate(customerId: number, input: ValidateInput, context: AuditContext): Promise<{ userId: number }>;
  /** Removes the user's pending and active authenticator; the second factor reads NONE. @throws NotFound */
  reset(customerId: number, login: string, context: AuditContext): Promise<{ userId: number; removed: boolean }>;
  /**
   * The login factor: a no-op when the user has no active authenticator, else `otp` must be a
   * current code not used before (accepting it uses it up).
   * @throws MfaFailed otp_required | wrong_code | replayed
   */
  checkLoginOtp(customerId: number, userId: number, otp: string | undefined): Promise<void>;
  /** True when the user has an active authenticator. */
  hasActiveAuthenticator(customerId: number, userId: number): Promise<boolean>;
}

/** Base32 as apps show it (lowercase, grouped by spaces, `=` padded) compared as we issue it. */
const normaliseSecret = (secret: string): string => secret.replace(/ /g, '').replace(/=+$/, '').toUpperCase();

export interface MfaServiceDeps {
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  users: UsersService;
  /** Enrolment and removal record user.mfa.enrolled and user.mfa.removed with their writes. */
  audit: AuditRecorder;
  /** The code check (default: RFC 6238, ±1 step); tests count the codes actually checked through it. */
  verifyCode?: typeof verifyTotp;
}

export function createMfaService(deps: MfaServiceDeps): MfaService {
  const { db, clock, sealer, users } = deps;
  const verifyCode = deps.verifyCode ?? verifyTotp;
  // Binds a sealed secret to its owner: a ciphertext copied onto another user's row does not open.
  const aad = (customerId: number, userId: number) => `mfa:${customerId}:${userId}`;
  const fail = (reason: keyof typeof MFA_MESSAGES & MfaFailed['reason']) => new MfaFailed(reason, MFA_MESSAGES[reason]);

  async function requireUser(customerId: number, login: string): Promise<User> {
    const user = await users.findByLogin(customerId, login);
    if (!user) throw new UserNotFound();
    return user;
  }

  /** Why a validation of `pendingSealed` with a code for `step` lost its conditional update. */
  async function explainLostActivation(customerId: number, userId: number, pendingSealed: string, step: number): Promise<MfaFailed> {
    const now = await repo.findAuthenticator(db, customerId, userId);
    if (now?.activeSecretSealed === pendingSealed && now.lastStep >= step) return fail('replayed');
    if (now?.pendingSecretSealed === pendingSealed) return fail('locked');
    if (now?.pendingSecretSealed) return fail('secret_mismatch');
    return fail('no_pending');
  }

  return {
    async register(customerId, input) {
      const user = await requireUser(customerId, input.login);
      const issuer = input.authenticatorName || input.customerDisplayName;
      const secret = generateTotpSecret();
      const otpauthUri = buildOtpauthUri({ issuer, account: user.username, secret });
      if (Buffer.byteLength(otpauthUri) > QR_MAX_BYTES) throw new Invalid('authenticatorName', 'is too long to fit in a QR code');
      // Rendered before anything is stored: a failure leaves no pending registration behind.
      const qrCodeData = await renderQrPngBase64(otpauthUri);
      try {
        await repo.savePending(db, customerId, user.id, sealer.seal(secret, aad(customerId, user.id)), clock.now());
      } catch (error) {
        if (repo.isForeignKeyViolation(error)) throw new UserNotFound();
        throw error;
      }
      return { userId: user.id, username: user.username, secret, otpauthUri, qrCodeData };
    },

    async validate(customerId, input, context) {
      const user = await requireUser(customerId, input.login);
      const row = await repo.findAuthenticator(db, customerId, user.id);
      const given = normaliseSecret(input.secret);
      const now = clock.now();
      if (!row?.pendingSecretSealed) {
        // A client retrying a validation that already succeeded learns that its code was used.
        if (row?.activeSecretSealed) {
          const active = sealer.open(row.activeSecretSealed, aad(customerId, user.id));
          const step = safeEqual(given, active) ? verifyCode(active, input.otp, now) : null;
          if (step !== null && step <= row.lastStep) throw fail('replayed');
        }
        throw fail('no_pending');
      }
      if (row.failedAttempts >= MAX_FAILED_ATTEMPTS) throw fail('locked');
      const pending = sealer.open(row.pendingSecretSealed, aad(customerId, user.id));
      // Checked before the code: without the secret a caller cannot spend the registration's attempts.
      if (!safeEqual(given, pending)) throw fail('secret_mismatch');

      // The attempt is counted before the code is checked, in one conditional statement: of any number
      // of concurrent guesses at most MAX_FAILED_ATTEMPTS are checked, the others are refused unchecked.
      const count = await repo.reserveAttempt(db, customerId, user.id, row.pendingSecretSealed, MAX_FAILED_ATTEMPTS, now);
      if (count === undefined) {
        // No place left: locked by concurrent attempts, or replaced or consumed meanwhile.
        const current = await repo.findAuthenticator(db, customerId, user.id);
        if (current?.activeSecretSealed === row.pendingSecretSealed) {
          // Consumed by a concurrent validation: a copy of its code learns it was used, as a retry does above.
          const step = verifyCode(pending, input.otp, now);
          throw fail(step !== null && step <= current.lastStep ? 'replayed' : 'no_pending');
        }
        if (current?.pendingSecretSealed === row.pendingSecretSealed) throw fail('locked');
        throw fail(current?.pendingSecretSealed ? 'secret_mismatch' : 'no_pending');
      }
      const step = verifyCode(pending, input.otp, now);
      if (step === null) {
        // The reservation stays: it is the recorded failure.
        if (count >= MAX_FAILED_ATTEMPTS) throw new MfaFailed('wrong_code', MFA_MESSAGES.wrong_code_now_locked);
        throw fail('wrong_code');
      }

      const pendingSealed = row.pendingSecretSealed;
      const activated = await db.transaction().execute(async (trx) => {
        if (!(await repo.activatePending(trx, customerId, user.id, pendingSealed, step, MAX_FAILED_ATTEMPTS, now))) return false;
        await users.setSecondFactorType(trx, customerId, user.id, GOOGLE_AUTHENTICATOR);
        await deps.audit.record(trx, customerId, { action: 'user.mfa.enrolled', target: userTarget(user) }, context);
        return true;
      });
      if (!activated) throw await explainLostActivation(customerId, user.id, pendingSealed, step);
      return { userId: user.id };
    },

    async reset(customerId, login, context) {
      const user = await requireUser(customerId, login);
      // The same lock order as validate (authenticator row, then user row): no deadlock between them.
      const removed = await db.transaction().execute(async (trx) => {
        const deleted = await repo.deleteAuthenticator(trx, customerId, user.id);
        await users.setSecondFactorType(trx, customerId, user.id, NO_SECOND_FACTOR);
        if (deleted) await deps.audit.record(trx, customerId, { action: 'user.mfa.removed', target: userTarget(user) }, context);
        return deleted;
      });
      return { userId: user.id, removed };
    },

    async checkLoginOtp(customerId, userId, otp) {
      const row = await repo.findAuthenticator(db, customerId, userId);
      if (!row?.activeSecretSealed) return;
      if (otp === undefined || otp === '') throw fail('otp_required');
      const secret = sealer.open(row.activeSecretSealed, aad(customerId, userId));
      const now = clock.now();
      const step = verifyCode(secret, otp, now);
      if (step === null) throw fail('wrong_code');
      if (step <= row.lastStep) throw fail('replayed');
      if (!(await repo.acceptStep(db, customerId, userId, row.activeSecretSealed, step, now))) {
        // Lost to a concurrent login with the same (or a later) code, or the secret changed meanwhile.
        const current = await repo.findAuthenticator(db, customerId, userId);
        throw fail(current?.activeSecretSealed === row.activeSecretSealed ? 'replayed' : 'wrong_code');
      }
    },

    async hasActiveAuthenticator(customerId, userId) {
      return Boolean((await repo.findAuthenticator(db, customerId, userId))?.activeSecretSealed);
    },
  };
}
