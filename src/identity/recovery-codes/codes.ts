/**
 * Recovery codes as a person reads and types them: ten characters of an alphabet without the look-alikes
 * 0/o, 1/l/i (31 symbols, about 49.5 bits each), and their storage form, a keyed hash: HMAC-SHA256
 * under a key derived from the master key, bound to the customer and user. A leaked database alone
 * cannot be brute-forced; the same code for two users hashes differently.
 */
import { createHmac, randomInt } from 'node:crypto';

export const CODE_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export const CODE_LENGTH = 10;
export const CODES_PER_SET = 10;

const LABEL = 'latchkey recovery codes\0';
const WELL_FORMED = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);

/** One new random code (crypto.randomInt: uniform over the alphabet). */
export function newRecoveryCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/**
 * The code as stored: lower-cased, without spaces and hyphens (people copy "ABCDE-FGHJK" or type it
 * in two groups). Undefined when it cannot be a code at all, so it costs no database read.
 */
export function normalizeRecoveryCode(typed: string): string | undefined {
  if (typed.length > 64) return undefined;
  const code = typed.toLowerCase().replace(/[\s-]+/g, '');
  return WELL_FORMED.test(code) ? code : undefined;
}

/** The hashing key: HMAC-SHA256(masterKey, label), so it is unrelated to every other key derived from it. */
export function deriveRecoveryCodeKey(masterKey: Buffer): Buffer {
  return createHmac('sha256', masterKey).update(LABEL).digest();
}

/** hex(HMAC-SHA256(key, customerId NUL userId NUL code)) of a normalized code. */
export function hashRecoveryCode(key: Buffer, customerId: number, userId: number, code: string): string {
  return createHmac('sha256', key).update(`${customerId}\0${userId}\0${code}`).digest('hex');
}
