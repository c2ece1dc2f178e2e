import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeBase32, encodeBase32 } from '../../../src/lib/base32.ts';
import { buildOtpauthUri, generateTotpSecret, hotp, totpAt, verifyTotp } from '../../../src/identity/mfa/totp.ts';

// RFC 6238 Appendix B seeds: the ASCII digits repeated to the hash's block-friendly key length.
const SEED_SHA1 = Buffer.from('12345678901234567890');
const SEED_SHA256 = Buffer.from('12345678901234567890123456789012');
const SEED_SHA512 = Buffer.from('1234567890123456789012345678901234567890123456789012345678901234');
const SECRET = encodeBase32(SEED_SHA1);

test('base32: RFC 4648 §10 vectors encode without padding and decode with or without it', () => {
  const vectors: Array<[string, string]> = [
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ];
  for (const [plain, padded] of vectors) {
    const unpadded = padded.replace(/=+$/, '');
    assert.equal(encodeBase32(Buffer.from(plain)), unpadded);
    assert.equal(decodeBase32(padded).toString(), plain);
    assert.equal(decodeBase32(unpadded).toString(), plain);
  }
  assert.equal(encodeBase32(Buffer.from('foobar')), 'MZXW6YTBOI');
});

test('base32: decoding ignores case and spaces', () => {
  assert.equal(decodeBase32('mzxw 6ytb oi').toString(), 'foobar');
  assert.equal(decodeBase32('MzXw6YtBoI==').toString(), 'foobar');
});

test('base32: decoding throws on characters outside the alphabet and on impossible lengths', () => {
  for (const bad of ['MZXW6YT1', 'MZXW6YT0', 'MZXW6YT8', 'MZXW-6YTB', 'MZXW6YTB!', 'MZ=XW6YTB', 'MZXW\t6YTB', 'MZXW6YTÉ']) {
    assert.throws(() => decodeBase32(bad), Error, bad);
  }
  for (const bad of ['M', 'MZX', 'MZXW6Y', 'MZXW6YTBO']) assert.throws(() => decodeBase32(bad), Error, bad);
});

test('base32: any bytes round-trip', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const buf = Buffer.from(bytes);
      const text = encodeBase32(buf);
      assert.match(text, /^[A-Z2-7]*$/);
      assert.equal(text.length, Math.ceil((buf.length * 8) / 5));
      assert.deepEqual(decodeBase32(text), buf);
      assert.deepEqual(decodeBase32(text.toLowerCase()), buf);
    }),
  );
});

test('hotp: RFC 4226 Appendix D vectors (counts 0..9, 6 digits)', () => {
  const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
  expected.forEach((code, count) => {
    assert.equal(hotp(SEED_SHA1, count), code, `count ${count}`);
    assert.equal(hotp(SEED_SHA1, BigInt(count)), code, `count ${count}n`);
  });
});

test('hotp: refuses counters and digit counts it cannot represent', () => {
  for (const counter of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1, -1n, 2n ** 64n]) {
    assert.throws(() => hotp(SEED_SHA1, counter), RangeError, String(counter));
  }
  assert.equal(hotp(SEED_SHA1, 2n ** 64n - 1n).length, 6);
  for (const digits of [0, 5, 11, 6.5]) assert.throws(() => hotp(SEED_SHA1, 0, digits), RangeError, String(digits));
});

test('totpAt: RFC 6238 Appendix B vectors (8 digits, SHA-1, SHA-256, SHA-512)', () => {
  const rows: Array<[number, string, string, string]> = [
    [59, '94287082', '46119246', '90693936'],
    [1111111109, '07081804', '68084774', '25091201'],
    [1111111111, '14050471', '67062674', '99943326'],
    [1234567890, '89005924', '91819424', '93441116'],
    [2000000000, '69279037', '90698825', '38618901'],
    [20000000000, '65353130', '77737706', '47863826'],
  ];
  for (const [seconds, sha1, sha256, sha512] of rows) {
    const timeMs = seconds * 1000;
    assert.equal(totpAt(SECRET, timeMs, { digits: 8 }), sha1, `sha1 @${seconds}`);
    assert.equal(totpAt(encodeBase32(SEED_SHA256), timeMs, { digits: 8, algorithm: 'sha256' }), sha256, `sha256 @${seconds}`);
    assert.equal(totpAt(encodeBase32(SEED_SHA512), timeMs, { digits: 8, algorithm: 'sha512' }), sha512, `sha512 @${seconds}`);
  }
});

test('totpAt: defaults are SHA-1, 6 digits, 30 s steps', () => {
  // 6 digits are the low digits of the 8-digit vector (both are the same 31-bit value mod 10^n).
  assert.equal(totpAt(SECRET, 59_000), '287082');
  assert.equal(totpAt(SECRET, 1_234_567_890_000), '005924');
  // Milliseconds within a step do not change the code; the next step does.
  assert.equal(totpAt(SECRET, 1_234_567_889_999), totpAt(SECRET, 1_234_567_860_000));
  assert.notEqual(totpAt(SECRET, 1_234_567_890_000), totpAt(SECRET, 1_234_567_889_999));
  assert.equal(totpAt(SECRET, 59_000, { stepSeconds: 60 }), hotp(SEED_SHA1, 0));
});

test('totp: leading zeros are kept and such a code verifies', () => {
  // RFC 6238 Appendix B: 1111111109 s gives 07081804, so its 6-digit code is 081804.
  const timeMs = 1_111_111_109_000;
  assert.equal(totpAt(SECRET, timeMs, { digits: 8 }), '07081804');
  assert.equal(totpAt(SECRET, timeMs), '081804');
  assert.equal(verifyTotp(SECRET, '081804', timeMs), Math.floor(1111111109 / 30));
  assert.equal(verifyTotp(SECRET, '81804', timeMs), null);
  assert.equal(verifyTotp(SECRET, 81804 as unknown as string, timeMs), null);
});

test('verifyTotp: accepts T-1, T and T+1 returning their step; refuses T-2 and T+2', () => {
  const now = 1_111_111_111_000;
  const T = Math.floor(now / 1000 / 30);
  const codeAt = (step: number) => totpAt(SECRET, step * 30_000);
  const codes = [-2, -1, 0, 1, 2].map((d) => codeAt(T + d));
  assert.equal(new Set(codes).size, 5, 'the five codes differ, so each result is about its own step');
  assert.equal(verifyTotp(SECRET, codeAt(T - 2), now), null);
  assert.equal(verifyTotp(SECRET, codeAt(T - 1), now), T - 1);
  assert.equal(verifyTotp(SECRET, codeAt(T), now), T);
  assert.equal(verifyTotp(SECRET, codeAt(T + 1), now), T + 1);
  assert.equal(verifyTotp(SECRET, codeAt(T + 2), now), null);
});

test('verifyTotp: the window option widens or narrows the accepted steps', () => {
  const now = 1_111_111_111_000;
  const T = Math.floor(now / 1000 / 30);
  const codeAt = (step: number) => totpAt(SECRET, step * 30_000);
  assert.equal(verifyTotp(SECRET, codeAt(T), now, { window: 0 }), T);
  assert.equal(verifyTotp(SECRET, codeAt(T - 1), now, { window: 0 }), null);
  assert.equal(verifyTotp(SECRET, codeAt(T + 1), now, { window: 0 }), null);
  assert.equal(verifyTotp(SECRET, codeAt(T - 2), now, { window: 2 }), T - 2);
  assert.equal(verifyTotp(SECRET, codeAt(T + 2), now, { window: 2 }), T + 2);
  for (const window of [-1, 0.5, Number.NaN]) assert.throws(() => verifyTotp(SECRET, codeAt(T), now, { window }), RangeError);
});

test('verifyTotp: a code keeps reporting its own step, so the caller can refuse a replay', () => {
  const now = 1_111_111_111_000;
  const code = totpAt(SECRET, now);
  const step = verifyTotp(SECRET, code, now);
  assert.equal(verifyTotp(SECRET, code, now + 30_000), step);
  assert.equal(verifyTotp(SECRET, code, now + 90_000), null);
});

test('verifyTotp: near the Unix epoch it skips negative steps instead of throwing', () => {
  assert.equal(verifyTotp(SECRET, hotp(SEED_SHA1, 0), 0), 0);
  assert.equal(verifyTotp(SECRET, hotp(SEED_SHA1, 1), 0), 1);
});

test('verifyTotp: anything but exactly six ASCII digits is refused with null, not an exception', () => {
  const now = 1_234_567_890_000;
  const code = totpAt(SECRET, now); // "005924"
  assert.equal(verifyTotp(SECRET, code, now), Math.floor(1234567890 / 30));
  const wrong: unknown[] = [
    code.slice(1),
    `${code}0`,
    `0${code}`,
    ` ${code}`,
    `${code} `,
    `${code}\n`,
    `00 5924`,
    '00592a',
    '+05924',
    '-05924',
    '００５９２４',
    '٠٠٥٩٢٤',
    '',
    5924,
    Number(code),
    null,
    undefined,
    {},
    [code],
    Buffer.from(code),
    { toString: () => code },
  ];
  for (const candidate of wrong) {
    assert.equal(verifyTotp(SECRET, candidate as string, now), null, JSON.stringify(candidate));
  }
  assert.equal(verifyTotp(SECRET, '000000', now), null);
});

test('generateTotpSecret: 32 base32 characters holding 20 random bytes', () => {
  const a = generateTotpSecret();
  const b = generateTotpSecret();
  for (const secret of [a, b]) {
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.equal(decodeBase32(secret).length, 20);
    assert.equal(totpAt(secret, 0).length, 6);
  }
  assert.notEqual(a, b);
});

test('buildOtpauthUri: label and issuer are percent-encoded, parameters fixed', () => {
  assert.equal(
    buildOtpauthUri({ issuer: 'Latchkey Example', account: 'alice@example.com', secret: 'JBSWY3DPEHPK3PXP' }),
    'otpauth://totp/Latchkey%20Example:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Latchkey%20Example&algorithm=SHA1&digits=6&period=30',
  );
  assert.equal(
    buildOtpauthUri({ issuer: 'A:B&C', account: 'x?y=z/é', secret: SECRET }),
    `otpauth://totp/A%3AB%26C:x%3Fy%3Dz%2F%C3%A9?secret=${SECRET}&issuer=A%3AB%26C&algorithm=SHA1&digits=6&period=30`,
  );
});
