/**
 * The QR code of an otpauth:// URI as a PNG, for `qrCodeData`. The matrix comes from `qrcode`; the
 * PNG is written here directly as 1-bit grayscale (a QR code has two colours): an eighth of the
 * RGBA image `qrcode` would hand to pngjs, and no per-row filter search, so rendering — the costly
 * step of registration — takes a fraction of the time.
 */
import { crc32, deflateSync } from 'node:zlib';
import QRCode from 'qrcode';

// Level M and a 2-module quiet zone scan reliably on phone cameras; scale 4 keeps the image about 200 px.
const ERROR_CORRECTION = 'M';
const MARGIN_MODULES = 2;
const SCALE = 4;
// Any of the eight masks gives a valid code; letting qrcode score all eight is three quarters of the
// matrix's cost. Mask 2 (vertical stripes every third column) decodes well; the tests scan many codes.
const MASK_PATTERN = 2;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * PNG (1-bit grayscale) of a square matrix where `dark(x, y)` is a dark module. Every module row is
 * SCALE identical pixel rows: the first is written out (filter 0), the others are filter 2 ("Up",
 * the difference from the row above): all zeros, which deflate folds at once, and which need no
 * pixels set here.
 */
function encodePng(modules: number, dark: (x: number, y: number) => boolean): Buffer {
  const pixels = (modules + 2 * MARGIN_MODULES) * SCALE;
  const rowBytes = 1 + Math.ceil(pixels / 8);
  const raw = Buffer.alloc(rowBytes * pixels);
  for (let y = 0; y < pixels; y++) {
    const row = y * rowBytes;
    if (y % SCALE !== 0) {
      raw[row] = 2;
      continue;
    }
    // Filter 0, all white (bit 1), then the bits of dark modules cleared.
    raw.fill(0xff, row + 1, row + rowBytes);
    const my = y / SCALE - MARGIN_MODULES;
    if (my < 0 || my >= modules) continue;
    for (let mx = 0; mx < modules; mx++) {
      if (!dark(mx, my)) continue;
      for (let x = (mx + MARGIN_MODULES) * SCALE, end = x + SCALE; x < end; x++) raw[row + 1 + (x >> 3)] &= ~(0x80 >> (x & 7));
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(pixels, 0);
  header.writeUInt32BE(pixels, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // colour type: grayscale
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * The URI as QR segments: bytes, except the base32 secret, which QR's alphanumeric mode holds in
 * fewer bits. Given explicitly, qrcode skips its search for the best split (two thirds of its time).
 */
function segmentsOf(text: string): QRCode.QRCodeSegment[] {
  const secret = /[?&]secret=([A-Z2-7]+)/.exec(text);
  const bytes = (part: string): QRCode.QRCodeSegment => ({ data: Buffer.from(part, 'utf8'), mode: 'byte' });
  if (!secret) return [bytes(text)];
  const start = secret.index + secret[0].length - secret[1].length;
  const end = start + secret[1].length;
  return [
    bytes(text.slice(0, start)),
    { data: secret[1], mode: 'alphanumeric' },
    ...(end < text.length ? [bytes(text.slice(end))] : []),
  ];
}

/** Base64 (no `data:` prefix) of a PNG QR code encoding `text`, as sent in `qrCodeData`. */
export async function renderQrPngBase64(text: string): Promise<string> {
  const { modules } = QRCode.create(segmentsOf(text), { errorCorrectionLevel: ERROR_CORRECTION, maskPattern: MASK_PATTERN } as QRCode.QRCodeOptions);
  return encodePng(modules.size, (x, y) => Boolean(modules.get(y, x))).toString('base64');
}
