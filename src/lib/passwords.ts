/**
 * Password hashing (argon2id, OWASP's m=19 MiB, t=2, p=1) and the password rule: 8 to 128
 * characters, no composition rules, common passwords refused (NIST SP 800-63B §5.1.1.2).
 * Hashes imported from other systems (argon2i/argon2id PHC strings, bcrypt) verify by their format
 * and say they need a rehash to the service's argon2id.
 */
import { availableParallelism } from 'node:os';
import argon2 from 'argon2';
import bcrypt from 'bcryptjs';
import { Invalid } from './errors.ts';

export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

const COMMON = new Set([
  'password', 'password1', 'password12', 'password123', 'password1234', 'passw0rd', 'p@ssw0rd', 'p@ssword',
  '12345678', '123456789', '1234567890', '87654321', '11111111', '00000000', '12341234', '11223344',
  'qwertyui', 'qwerty123', 'qwertyuiop', '1q2w3e4r', '1q2w3e4r5t', 'zaq12wsx', 'asdfghjkl', 'abc12345',
  'abcd1234', 'iloveyou', 'sunshine', 'princess', 'football', 'baseball', 'welcome1', 'welcome123',
  'letmein1', 'letmein123', 'trustno1', 'superman', 'starwars', 'whatever', 'dragon12', 'monkey12',
  'michelle', 'jennifer', 'computer', 'internet', 'changeme', 'changeme1', 'administrator', 'admin123',
  'admin1234', 'adminadmin', 'master12', 'shadow12', 'secret12', 'qazwsxedc', 'aaaaaaaa', 'asdf1234',
]);

/** @throws Invalid when the password breaks the rule. */
export function checkPasswordRule(password: string, field = 'password'): void {
  const length = [...password].length;
  if (length < 8 || length > 128) throw new Invalid(field, 'must be 8 to 128 characters');
  if (COMMON.has(password.toLowerCase())) throw new Invalid(field, 'is too common; choose another');
}

/**
 * At most one argon2id computation per CPU, plus one, at a time (the rest wait their turn in order):
 * each holds 19 MiB while it runs, and more at once than there are CPUs adds memory, not throughput.
 * The extra one keeps every CPU busy while the event loop hands a finished slot over (measured by
 * bench/: exactly one per CPU lost 4% of logins/s; libuv's default four threads held 40 MiB more).
 */
const MAX_CONCURRENT = availableParallelism() + 1;
let running = 0;
const waiting: (() => void)[] = [];

async function withArgon2Slot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, so `running` only falls when nobody waits.
    const next = waiting.shift();
    if (next) next(); else running--;
  }
}

export function hashPassword(password: string): Promise<string> {
  return withArgon2Slot(() => argon2.hash(password, ARGON2_OPTIONS));
}

/**
 * The PHC string format: the reference encoder writes m,t,p and node-argon2 m,p,t; the version part is
 * optional as in argon2 1.0.
 */
const ARGON2_HASH = /^\$argon2(?:id|i)\$(?:v=\d+\$)?[mtp]=\d+,[mtp]=\d+,[mtp]=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;
/** Modular crypt: $2a$/$2b$/$2y$, cost 04..31, 22 characters of salt and 31 of digest. */
const BCRYPT_HASH = /^\$2[aby]\$(?:0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$/;

export type HashFormat = 'argon2' | 'bcrypt';

/** The format of a stored or imported hash, or undefined when it is neither argon2i/argon2id nor bcrypt. */
export function hashFormat(hash: string): HashFormat | undefined {
  if (ARGON2_HASH.test(hash)) return 'argon2';
  if (BCRYPT_HASH.test(hash)) return 'bcrypt';
  return undefined;
}

/** Whether a verified hash should be replaced by hashPassword's: another algorithm or other parameters. */
export function needsRehash(hash: string): boolean {
  if (!hash.startsWith('$argon2id$') || hashFormat(hash) !== 'argon2') return true;
  try {
    return argon2.needsRehash(hash, ARGON2_OPTIONS);
  } catch {
    return true;
  }
}

/** Constant-time verification by the hash's format; a malformed stored hash verifies as false. */
export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    // bcryptjs's asynchronous compare runs in slices on the event loop (pure JS, no native build);
    // only imported users carry such hashes, until their first login replaces them.
    if (hashFormat(hash) === 'bcrypt') return await bcrypt.compare(password, hash);
    return await withArgon2Slot(() => argon2.verify(hash, password));
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;
/** Burns one verification's worth of time so an unknown user answers like a wrong password. */
export async function verifyAgainstDummy(password: string): Promise<void> {
  dummyHash ??= hashPassword('latchkey-dummy-password');
  await verifyPassword(await dummyHash, password);
}
