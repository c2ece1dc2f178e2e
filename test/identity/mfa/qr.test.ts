import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PNG } from 'pngjs';
import jsQRModule from 'jsqr';
import { renderQrPngBase64 } from '../../../src/identity/mfa/qr.ts';
import { buildOtpauthUri, generateTotpSecret, totpAt, verifyTotp } from '../../../src/identity/mfa/totp.ts';

// jsqr is CommonJS with `exports.default`: under NodeNext the default import is the whole module object.
const jsQR = jsQRModule.default;

function decodeQr(base64: string): string | undefined {
  const png = PNG.sync.read(Buffer.from(base64, 'base64'));
  const pixels = new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length);
  return jsQR(pixels, png.width, png.height)?.data;
}

test('renderQrPngBase64: a bare base64 PNG that decodes back to the otpauth URI', async () => {
  const secret = generateTotpSecret();
  const uri = buildOtpauthUri({ issuer: 'Latchkey Example', account: 'alice@example.com', secret });

  const base64 = await renderQrPngBase64(uri);
  assert.match(base64, /^[A-Za-z0-9+/]+={0,2}$/);
  assert.deepEqual([...Buffer.from(base64, 'base64').subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

  const decoded = decodeQr(base64);
  assert.equal(decoded, uri);

  // What an authenticator app does after scanning: read the secret and produce codes the server accepts.
  const secretFromUri = new URL(decoded!).searchParams.get('secret');
  assert.equal(secretFromUri, secret);
  const now = 1_700_000_000_000;
  assert.equal(verifyTotp(secret, totpAt(secretFromUri!, now), now), Math.floor(now / 30_000));
});

test('renderQrPngBase64: labels with reserved and non-ASCII characters survive the round trip', async () => {
  const uri = buildOtpauthUri({ issuer: 'Ünïcode: Co & Sons', account: 'bøb+mfa@example.com', secret: generateTotpSecret() });
  assert.equal(decodeQr(await renderQrPngBase64(uri)), uri);
});

test('renderQrPngBase64: codes for many secrets and label lengths all scan', async () => {
  for (let i = 0; i < 40; i++) {
    const account = `user-${i}-${'x'.repeat(i * 2)}@example.com`;
    const uri = buildOtpauthUri({ issuer: `Issuer ${'y'.repeat(i)}`, account, secret: generateTotpSecret() });
    assert.equal(decodeQr(await renderQrPngBase64(uri)), uri, `code ${i} scans`);
  }
});
