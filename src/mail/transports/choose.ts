import { join } from 'node:path';
import type { Clock } from '../../lib/clock.ts';
import type { MailTransport } from '../transport.ts';
import { createEmlFileTransport } from './eml-file.ts';
import { createSmtpTransport, type SmtpTransportOptions } from './smtp.ts';

export interface MailTransportConfig {
  /** `LATCHKEY_SMTP_URL`; without it mails become .eml files. */
  smtpUrl?: string;
  /** `LATCHKEY_DATA_DIR`: the .eml files go to `<dataDir>/outbox/`. */
  dataDir: string;
  clock: Clock;
  smtp?: SmtpTransportOptions;
}

/** SMTP when configured, else .eml files under the data directory (DESIGN.md, "Mail"). */
export function createMailTransport({ smtpUrl, dataDir, clock, smtp }: MailTransportConfig): MailTransport {
  return smtpUrl ? createSmtpTransport(smtpUrl, smtp) : createEmlFileTransport({ dir: join(dataDir, 'outbox'), clock });
}
