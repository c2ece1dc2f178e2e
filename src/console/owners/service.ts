/**
 * The console owner (the customer's e-mail): console password, sign-in check under the login
 * throttle shared with the site's token endpoint, and the optional authenticator (enrol, check, remove).
 */
import QRCode from 'qrcode';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { checkPasswordRule, hashPassword, verifyAgainstDummy, verifyPassword } from '../../lib/passwords.ts';
import type { Sealer } from '../../lib/seal.ts';
import { buildOtpauthUri, generateTotpSecret, verifyTotp } from '../../identity/mfa/totp.ts';
import { createLoginThrottle, type LoginAttempt, type LoginThrottle, type Reservation } from '../../store/throttles/login.ts';
import type { Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { ThrottleStore } from '../../store/throttles/types.ts';
import * as repo from './repo.ts';

export interface Owner {
  customerId: number;
  customerKey: string;
  email: string;
  displayName: string;
  hasAuthenticator: boolean;
}

/** What a right password leads to: signed in, or the authenticator code still due. */
export type PasswordResult =
  | { outcome: 'signed-in'; owner: Owner }
  | { outcome: 'code-due'; owner: Owner }
  | { outcome: 'wrong' };

export interface Enrolment {
  secret: string;
  otpauthUri: string;
  /** The QR code as inline SVG markup (drawn by the qrcode package; no image fetch, no data: URI). */
  qrSvg: string;
}

export interface ConsoleOwnersService {
  /** @throws NotFound (customer), Invalid (password rule). */
  setPassword(customerKey: string, password: string): Promise<{ customerId: number; email: string }>;
  /** The hash of a new console password, for storePasswordHash. @throws Invalid (password rule). */
  hashNewPassword(password: string): Promise<string>;
  /** Stores a hash from hashNewPassword, in the caller's transaction (the first sign-in link's). */
  storePasswordHash(db: Executor, customerId: number, hash: string): Promise<void>;
  /**
   * Checks e-mail and password, the attempt reserved first (one atomic operation) so a throttled
   * caller costs no argon2 run. An unknown e-mail takes as long as a wrong password.
   * @throws RateLimited while the owner's or the address's key is blocked.
   */
  checkPassword(email: string, password: string, clientAddress: string): Promise<PasswordResult>;
  /** Reserves an attempt for the code step. @throws RateLimited */
  reserveCode(customerId: number, clientAddress: string): Promise<Reservation>;
  /** True when `code` is a current, unused code of the owner's active authenticator. */
  checkCode(customerId: number, code: string): Promise<boolean>;
  findById(customerId: number): Promise<Owner | undefined>;
  /** A fresh secret kept as pending until confirmed. */
  startEnrolment(customerId: number): Promise<Enrolment>;
  /** @throws Invalid('code') when the code does not match the pending secret. */
  confirmEnrolment(customerId: number, code: string): Promise<void>;
  removeAuthenticator(customerId: number): Promise<void>;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export function createConsoleOwnersService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  /** Where the default throttle counts (compose/index.ts: Redis when configured); default: the database. */
  throttles?: ThrottleStore;
  /** Default: 5 attempts per owner, 50 per address, blocks doubling up to 15 minutes. */
  throttle?: LoginThrottle;
}): ConsoleOwnersService {
  const { db, clock, sealer } = deps;
  const throttle = deps.throttle
    ?? createLoginThrottle({ store: deps.throttles, db, clock, userFreeAttempts: 5, ipFreeAttempts: 50, maxDelaySeconds: 900 });
  const aad = (customerKey: string) => `console-totp:${customerKey}`;
  const toOwner = (row: repo.OwnerRow): Owner => ({
    customerId: row.customerId, customerKey: row.customerKey, email: row.email, displayName: row.displayName,
    hasAuthenticator: row.totpSealed !== null,
  });
  // Own prefixes: console attempts never use up a site user's budget (site keys are uid:/u:/ip:).
  const attempt = (owner: string, clientAddress: string): LoginAttempt => ({ userKey: `console:${owner}`, ipKey: `console-ip:${clientAddress}` });

  return {
    async setPassword(customerKey, password) {
      checkPasswordRule(password);
      const row = await repo.findOwnerByKey(db, customerKey);
      if (!row) throw new NotFound('customer');
      await repo.setPasswordHash(db, row.customerId, await hashPassword(password), clock.now());
      return { customerId: row.customerId, email: row.email };
    },

    async hashNewPassword(password) {
      checkPasswordRule(password);
      return hashPassword(password);
    },

    storePasswordHash: (executor, customerId, hash) => repo.setPasswordHash(executor, customerId, hash, clock.now()),

    async checkPassword(email, password, clientAddress) {
      const normalised = email.trim().toLowerCase();
      const row = EMAIL.test(normalised) ? await repo.findOwnerByEmail(db, normalised) : undefined;
      const reservation = await throttle.reserve(attempt(row ? `id:${row.customerId}` : `e:${normalised}`, clientAddress));
      try {
        const ok = row?.passwordHash ? await verifyPassword(row.passwordHash, password) : (await verifyAgainstDummy(password), false);
        if (!ok || !row) {
          await reservation.failed();
          return { outcome: 'wrong' };
        }
        if (row.totpSealed !== null) {
          // Given back, not a success: a success would let whoever knows the password reset the
          // count and guess codes without end (the site's token endpoint does the same).
          await reservation.release();
          return { outcome: 'code-due', owner: toOwner(row) };
        }
        await reservation.succeeded();
        return { outcome: 'signed-in', owner: toOwner(row) };
      } catch (error) {
        await reservation.release();
        throw error;
      }
    },

    reserveCode: (customerId, clientAddress) => throttle.reserve(attempt(`id:${customerId}`, clientAddress)),

    async checkCode(customerId, code) {
      const row = await repo.findOwnerById(db, customerId);
      if (!row?.totpSealed) return false;
      const step = verifyTotp(sealer.open(row.totpSealed, aad(row.customerKey)), code.trim(), clock.now());
      return step !== null && repo.useTotpStep(db, customerId, step);
    },

    async findById(customerId) {
      const row = await repo.findOwnerById(db, customerId);
      return row && toOwner(row);
    },

    async startEnrolment(customerId) {
      const row = await repo.findOwnerById(db, customerId);
      if (!row) throw new NotFound('customer');
      const secret = generateTotpSecret();
      await repo.setPendingTotp(db, customerId, sealer.seal(secret, aad(row.customerKey)), clock.now());
      const otpauthUri = buildOtpauthUri({ issuer: 'Latchkey console', account: row.email, secret });
      const qrSvg = await QRCode.toString(otpauthUri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      return { secret, otpauthUri, qrSvg };
    },

    async confirmEnrolment(customerId, code) {
      const row = await repo.findOwnerById(db, customerId);
      if (!row?.totpPendingSealed) throw new Invalid('code', 'has no authenticator being set up; start again');
      const step = verifyTotp(sealer.open(row.totpPendingSealed, aad(row.customerKey)), code.trim(), clock.now());
      if (step === null) throw new Invalid('code', 'does not match; check the time on your phone and try again');
      if (!await repo.activatePendingTotp(db, customerId, row.totpPendingSealed, step, clock.now())) {
        throw new Invalid('code', 'has no authenticator being set up; start again');
      }
    },

    async removeAuthenticator(customerId) {
      await repo.removeTotp(db, customerId, clock.now());
    },
  };
}
