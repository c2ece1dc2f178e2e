/**
 * The check of `LATCHKEY_SMTP_URL`, apart from the transport: the configuration checks it at every
 * start (the CLI's too) without loading nodemailer.
 */
import { Invalid } from '../../lib/errors.ts';

/** @throws Invalid when the URL is not smtp:// or smtps:// with a host. */
export function checkSmtpUrl(url: string): URL {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (!parsed || (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') || !parsed.hostname) {
    throw new Invalid('LATCHKEY_SMTP_URL', 'must be smtp://host:port or smtps://user:pass@host:port');
  }
  return parsed;
}
