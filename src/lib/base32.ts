/**
 * RFC 4648 §6 base32 (alphabet A–Z, 2–7), the encoding authenticator apps use for TOTP secrets.
 * Encodes uppercase without padding; decodes leniently (any case, spaces, trailing `=`) but rejects other characters.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Base32 of `buf`, uppercase, without `=` padding (otpauth URIs omit it). */
export function encodeBase32(buf: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of buf) {
    value = ((value << 8) | byte) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(value >>> bits) & 31];
    }
  }
  // RFC 4648 §6: a final partial group is padded on the right with zero bits.
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The bytes encoded by `text`, ignoring case, spaces (secrets are often shown in groups of four) and trailing `=` padding.
 * @throws Error when `text` holds a character outside the alphabet or has a length no encoding can produce.
 */
export function decodeBase32(text: string): Buffer {
  const clean = text.replace(/ /g, '').replace(/=+$/, '').toUpperCase();
  // RFC 4648 §6: a final group of 1, 3 or 6 characters cannot come from whole bytes.
  if ([1, 3, 6].includes(clean.length % 8)) throw new Error('invalid base32 length');
  const out = Buffer.alloc(Math.floor((clean.length * 5) / 8));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (const char of clean) {
    const digit = ALPHABET.indexOf(char);
    if (digit === -1) throw new Error('invalid base32 character');
    value = ((value << 5) | digit) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (value >>> bits) & 0xff;
    }
  }
  return out;
}
