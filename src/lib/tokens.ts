/**
 * Random secrets and their storage form. Generated secrets carry a prefix and a CRC32 checksum
 * (like GitHub's `ghp_` tokens) so secret scanners can spot leaked ones and a typo is rejected
 * without a database read. They contain no dots, so they never look like a JWT.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function toBase62(bytes: Buffer): string {
  let n = BigInt('0x' + (bytes.toString('hex') || '0'));
  let out = '';
  while (n > 0n) { out = BASE62[Number(n % 62n)] + out; n /= 62n; }
  return out;
}

/** The CRC-32 (IEEE) of each byte value, computed once: the check runs on every API-key request. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  return crc >>> 0;
});

/** The 6-character checksum of an ASCII text: its CRC-32 in base 62. */
function checksumOf(text: string): string {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]!;
  let n = (crc ^ 0xffffffff) >>> 0;
  let out = '';
  while (n > 0) { out = BASE62[n % 62] + out; n = Math.floor(n / 62); }
  return out.padStart(6, '0');
}

/** A new secret `<prefix>_<base62 body><6-char checksum>` with `bytes` random bytes (>= 16). */
export function generateSecret(prefix: string, bytes = 32): string {
  const body = toBase62(randomBytes(bytes)).padStart(Math.ceil(bytes * 1.35), '0');
  return `${prefix}_${body}${checksumOf(`${prefix}_${body}`)}`;
}

/** Secrets are ASCII; anything else is not one of ours (and the checksum counts bytes, not characters). */
const ASCII = /^[\x00-\x7f]*$/;

/** True when `value` has the prefix and a correct checksum: a cheap check before any lookup. */
export function hasValidChecksum(value: string, prefix: string): boolean {
  if (!value.startsWith(`${prefix}_`) || value.length < prefix.length + 8 || !ASCII.test(value)) return false;
  return checksumOf(value.slice(0, -6)) === value.slice(-6);
}

/** SHA-256 hex: the storage form of high-entropy secrets (lookup by hash, never by the secret). */
export function sha256Hex(value: string): string {
  // One-shot: no Hash object per call (this runs on every API-token request).
  return hash('sha256', value, 'hex');
}

/** Constant-time string equality: `===` leaks the length of the matching prefix. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
