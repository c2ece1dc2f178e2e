/** The QR code of an otpauth:// URI as a PNG, for `qrCodeData`, drawn by the qrcode package. */
import QRCode from 'qrcode';

/** Base64 (no `data:` prefix) of a PNG QR code encoding `text`, as sent in `qrCodeData`. */
export async function renderQrPngBase64(text: string): Promise<string> {
  // Level M survives a scuffed screen; a 2-module quiet zone and scale 4 scan reliably on phone
  // cameras and keep the image about 200 px wide.
  const png = await QRCode.toBuffer(text, { type: 'png', errorCorrectionLevel: 'M', margin: 2, scale: 4 });
  return png.toString('base64');
}
