/**
 * Authenticator-app codes: HOTP (RFC 4226) and TOTP (RFC 6238) with SHA-1, 6 digits, 30 s steps, the
 * parameters apps actually honour. Pure functions of a secret and an instant; replay state belongs to the caller.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeBase32, encodeBase32 } from '../../lib/base32.ts';

export type TotpAlgorithm = 'sha1' | 'sha256' | 'sha512';

export interface TotpOptions {
  stepSeconds?: number;
  digits?: number;
  algorithm?: TotpAlgorithm;
}

const STEP_SECONDS = 30;
const DIGITS = 6;
const SIX_DIGITS = /^[0-9]{6}$/;

/** A new TOTP secret: 160 random bits (RFC 4226 §4 R6 recommends 160), base32-encoded (32 characters). */
export function generateTotpSecret(): string {
  return encodeBase32(randomBytes(20));
}

/**
 * The RFC 4226 HOTP value of `key` at `counter`, zero-padded to `digits`.
 * @throws RangeError when `counter` is not an integer in 0..2^64-1 or `digits` is not in 6..10.
 */
export function hotp(key: Buffer, counter: number | bigint, digits = DIGITS, algorithm: TotpAlgorithm = 'sha1'): string {
  if (typeof counter === 'number' && !(Number.isSafeInteger(counter) && counter >= 0)) {
    throw new RangeError('counter must be a non-negative integer');
  }
  // RFC 4226 §5.3 asks for at least 6 digits; the 31-bit truncated value has at most 10.
  if (!Number.isInteger(digits) || digits < 6 || digits > 10) throw new RangeError('digits must be 6..10');
  // RFC 4226 §5.1: the counter is an 8-byte big-endian value (writeBigUInt64BE rejects values outside 0..2^64-1).
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(message).digest();
  // RFC 4226 §5.3 dynamic truncation: the low nibble of the last byte picks 4 bytes; the top bit is dropped so
  // the value reads the same as signed or unsigned.
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** RFC 6238 §4.2 time step T = floor((unixSeconds - T0) / X), with T0 = 0. */
function timeStep(timeMs: number, stepSeconds: number): number {
  if (!Number.isFinite(timeMs) || timeMs < 0) throw new RangeError('timeMs must be a non-negative finite number');
  if (!Number.isInteger(stepSeconds) || stepSeconds <= 0) throw new RangeError('stepSeconds must be a positive integer');
  return Math.floor(Math.floor(timeMs / 1000) / stepSeconds);
}

/**
 * The TOTP code for `secretBase32` at `timeMs` (epoch milliseconds); defaults are SHA-1, 6 digits, 30 s.
 * @throws Error when the secret is not base32; RangeError on out-of-range options or a negative time.
 */
export function totpAt(secretBase32: string, timeMs: number, opts: TotpOptions = {}): string {
  const counter = timeStep(timeMs, opts.stepSeconds ?? STEP_SECONDS);
  return hotp(decodeBase32(secretBase32), counter, opts.digits ?? DIGITS, opts.algorithm ?? 'sha1');
}

/**
 * The time step `code` is valid for at `timeMs` (SHA-1, 6 digits, 30 s), or null when it matches none.
 * Store the returned step and refuse any later code whose step is not greater: that is what makes a code single-use.
 * Anything but a string of exactly six ASCII digits returns null.
 * @param opts.window steps of drift accepted on each side (default 1).
 * @throws Error when the secret is not base32; RangeError when `window` is not a non-negative integer.
 */
export function verifyTotp(secretBase32: string, code: string, timeMs: number, opts: { window?: number } = {}): number | null {
  const window = opts.window ?? 1;
  if (!Number.isInteger(window) || window < 0) throw new RangeError('window must be a non-negative integer');
  const key = decodeBase32(secretBase32);
  const now = timeStep(timeMs, STEP_SECONDS);
  if (typeof code !== 'string' || !SIX_DIGITS.test(code)) return null;
  const given = Buffer.from(code);
  let matched: number | null = null;
  // RFC 6238 §5.2: accept one step of drift either side (window = 1) to allow for clock skew and typing time.
  for (let step = Math.max(0, now - window); step <= now + window; step++) {
    // Constant-time: === leaks the length of the matching prefix. Every step is checked, and the latest match
    // wins, so a code that happens to match two steps cannot be replayed against the later one.
    if (timingSafeEqual(given, Buffer.from(hotp(key, step)))) matched = step;
  }
  return matched;
}

/** The `otpauth://totp/` URI (Google Authenticator Key Uri Format) that an authenticator app scans. */
export function buildOtpauthUri({ issuer, account, secret }: { issuer: string; account: string; secret: string }): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  return (
    `otpauth://totp/${label}?secret=${encodeURIComponent(secret)}&issuer=${encodeURIComponent(issuer)}` +
    `&algorithm=SHA1&digits=${DIGITS}&period=${STEP_SECONDS}`
  );
}
