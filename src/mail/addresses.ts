/**
 * Address checks that make header injection impossible: a recipient is one bare addr-spec (no
 * display name, no list, no whitespace or control characters), and header text is one line.
 */
import addressparser from 'nodemailer/lib/addressparser';
import { Invalid } from '../lib/errors.ts';

export interface MailAddress {
  name: string;
  address: string;
}

// Conservative addr-spec: no quoting, comments, brackets or list separators, so nothing can
// close the address and start another header or recipient.
const BARE_ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/** @throws Invalid when `value` is not exactly one bare e-mail address. */
export function checkRecipient(value: string, field = 'to'): string {
  if (typeof value !== 'string' || value.length > 254 || !BARE_ADDRESS.test(value)) {
    throw new Invalid(field, 'must be a single e-mail address');
  }
  const parsed = addressparser(value, { flatten: true });
  if (parsed.length !== 1 || parsed[0]!.address !== value) throw new Invalid(field, 'must be a single e-mail address');
  return value;
}

/**
 * The sender, as `LATCHKEY_MAIL_FROM` gives it: `no-reply@example.com` or `Latchkey <no-reply@example.com>`.
 * @throws Invalid when it is not exactly one mailbox with a bare address.
 */
export function parseSender(value: string): MailAddress {
  if (typeof value !== 'string' || /[\x00-\x1f\x7f]/.test(value)) throw new Invalid('from', 'must be one e-mail address on one line');
  const parsed = addressparser(value, { flatten: true });
  if (parsed.length !== 1) throw new Invalid('from', 'must be one e-mail address');
  const { name, address } = parsed[0]!;
  checkRecipient(address, 'from');
  return { name, address };
}

/** Header text on one line: control characters (CR and LF among them) become spaces. */
export function oneLine(value: string, maxLength = 200): string {
  const line = value.replace(/[\x00-\x1f\x7f\u2028\u2029]+/g, ' ').replace(/ {2,}/g, ' ').trim();
  return line.length > maxLength ? `${line.slice(0, maxLength - 1)}…` : line;
}
