/**
 * Password hashing (argon2id, OWASP's m=19 MiB, t=2, p=1) and the password rule: 8 to 128
 * characters, no composition rules, common passwords refused (NIST SP 800-63B §5.1.1.2).
 */
import { availableParallelism } from 'node:os';
import argon2 from 'argon2';
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

/** Constant-time verification; a malformed stored hash verifies as false. */
export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
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
