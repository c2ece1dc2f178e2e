/**
 * The QR encoder (src/identity/mfa/qr-matrix.ts) against the `qrcode` package, as an independent
 * reference: same segments, level M, mask 2, so every module of every symbol must agree, in all
 * forty versions. Scanning (qr.test.ts) shows the symbols decode; this shows they are the standard's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import QRCode from 'qrcode';
import { encodeQr, MASK_PATTERN, type QrSegment } from '../../../src/identity/mfa/qr-matrix.ts';

function reference(segments: QrSegment[]): { size: number; data: Uint8Array } {
  const options = { errorCorrectionLevel: 'M', maskPattern: MASK_PATTERN } as QRCode.QRCodeOptions;
  return QRCode.create(segments as QRCode.QRCodeSegment[], options).modules;
}

/** Printable ASCII of length n, different for each n. */
const textOf = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => 32 + ((i * 31 + n) % 95)));
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

test('every module agrees with the reference encoder, in every version from 1 to 40', () => {
  const versions = new Set<number>();
  for (let n = 1; n <= 2300; n += 3) {
    // Every other symbol mixes modes as a registration's URI does: bytes, the base32 secret, bytes.
    const used: QrSegment[] = n % 2 === 1 || n > 2250 ? [{ mode: 'byte', data: textOf(n) }] : [
      { mode: 'byte', data: textOf(n) },
      { mode: 'alphanumeric', data: BASE32.repeat(2).slice(n % 32, (n % 32) + 1 + (n % 13)) },
      { mode: 'byte', data: textOf(3) },
    ];
    const ours = encodeQr(used);
    const theirs = reference(used);
    assert.equal(ours.size, theirs.size, `size for ${n} bytes`);
    for (let i = 0; i < ours.dark.length; i++) {
      if (ours.dark[i] !== (theirs.data[i] ? 1 : 0)) assert.fail(`module ${i % ours.size},${Math.floor(i / ours.size)} differs for ${n} bytes`);
    }
    versions.add((ours.size - 17) / 4);
  }
  assert.deepEqual([...versions].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1));
});

test('odd and even alphanumeric lengths, and text that fills a version exactly', () => {
  for (const data of ['A', 'AB', 'ABC', 'HELLO WORLD', '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:']) {
    const segments: QrSegment[] = [{ mode: 'alphanumeric', data }];
    assert.deepEqual([...encodeQr(segments).dark], [...reference(segments).data]);
  }
  // Version 1 at level M holds 14 bytes: 14 fit in it, 15 need version 2.
  assert.equal(encodeQr([{ mode: 'byte', data: textOf(14) }]).size, 21);
  assert.equal(encodeQr([{ mode: 'byte', data: textOf(15) }]).size, 25);
});

test('data too long for version 40, or not alphanumeric, is refused', () => {
  assert.equal(encodeQr([{ mode: 'byte', data: textOf(2331) }]).size, 177);
  assert.throws(() => encodeQr([{ mode: 'byte', data: textOf(2332) }]), RangeError);
  assert.throws(() => encodeQr([{ mode: 'alphanumeric', data: 'lower case' }]), RangeError);
});
