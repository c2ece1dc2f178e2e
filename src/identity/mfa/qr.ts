/**
 * The QR code of an otpauth:// URI as a PNG, for `qrCodeData`: the symbol from qr-matrix.ts, the
 * image from png.ts. Rendering was the costly step of registration; both are written for it.
 */
import { encodeQr, type QrSegment } from './qr-matrix.ts';
import { encodeQrPng } from './png.ts';

// A 2-module quiet zone scans reliably on phone cameras; scale 4 keeps the image about 200 px.
const MARGIN_MODULES = 2;
const SCALE = 4;

/**
 * The URI as QR segments: bytes, except the base32 secret, which QR's alphanumeric mode holds in
 * fewer bits (a smaller symbol for the same URI).
 */
function segmentsOf(text: string): QrSegment[] {
  const secret = /[?&]secret=([A-Z2-7]+)/.exec(text);
  const bytes = (part: string): QrSegment => ({ data: Buffer.from(part, 'utf8'), mode: 'byte' });
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
  return encodeQrPng(encodeQr(segmentsOf(text)), MARGIN_MODULES, SCALE).toString('base64');
}
