/**
 * The QR PNG writer (src/identity/mfa/png.ts) writes its own deflate stream: decoded by pngjs (its
 * own inflate, checksums checked), every pixel must be the module it stands for, at every scale and
 * quiet zone, for symbols small and large.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import { encodeQrPng } from '../../../src/identity/mfa/png.ts';
import { encodeQr, type QrMatrix } from '../../../src/identity/mfa/qr-matrix.ts';

function assertPixels(png: Buffer, matrix: QrMatrix, margin: number, scale: number): void {
  const image = PNG.sync.read(png);
  const side = (matrix.size + 2 * margin) * scale;
  assert.equal(image.width, side);
  assert.equal(image.height, side);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const mx = Math.floor(x / scale) - margin;
      const my = Math.floor(y / scale) - margin;
      const dark = mx >= 0 && my >= 0 && mx < matrix.size && my < matrix.size && matrix.dark[my * matrix.size + mx] === 1;
      const value = image.data[(y * side + x) * 4];
      if (value !== (dark ? 0 : 255)) assert.fail(`pixel ${x},${y} is ${value}, module ${mx},${my} is ${dark ? 'dark' : 'light'}`);
    }
  }
}

const symbol = (bytes: number) => encodeQr([{ mode: 'byte', data: Buffer.alloc(bytes, 'q') }]);

test('every pixel is its module, at scales that do and do not fill whole bytes', () => {
  for (const matrix of [symbol(10), symbol(150), symbol(700)]) {
    for (const scale of [1, 2, 3, 4, 5, 8, 11]) {
      for (const margin of [0, 1, 2, 4]) assertPixels(encodeQrPng(matrix, margin, scale), matrix, margin, scale);
    }
  }
});

test('the largest symbol (version 40) at the registration scale decodes, and zlib accepts its stream', () => {
  const matrix = symbol(2331);
  const png = encodeQrPng(matrix, 2, 4);
  assertPixels(png, matrix, 2, 4);
  const idat = png.subarray(41, 41 + png.readUInt32BE(33));
  assert.equal(png.subarray(37, 41).toString('latin1'), 'IDAT');
  assert.equal(inflateSync(idat).length, (1 + Math.ceil(((177 + 4) * 4) / 8)) * (177 + 4) * 4);
});
