/**
 * Mail, built once: the outbox services write into inside their transactions, the transport (SMTP,
 * or .eml files without it) and the worker that drains the outbox (started by compose's `background`).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import { createOutbox, type Outbox } from '../mail/outbox.ts';
import { createMailTransport } from '../mail/transports/choose.ts';
import { createMailWorker, type MailLogger, type MailWorker } from '../mail/worker.ts';
import type { Dialect } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

export interface Mail {
  outbox: Outbox;
  /** Drains the outbox; the server starts it (a BackgroundTask), tests call runOnce(). */
  worker: MailWorker;
  /** Closes the mail transport (the SMTP pool's sockets). */
  close(): void;
}

export interface MailDeps {
  db: Kysely<Database>;
  dialect: Dialect;
  clock: Clock;
  sealer: Sealer;
  publicUrl: string;
  dataDir: string;
  smtpUrl?: string;
  /** LATCHKEY_MAIL_FROM; default `Latchkey <no-reply@<public URL host>>`. */
  mailFrom?: string;
  mailLogger?: MailLogger;
}

export function composeMail(deps: MailDeps): Mail {
  const host = new URL(deps.publicUrl).hostname;
  const outbox = createOutbox({ sealer: deps.sealer, clock: deps.clock, messageIdDomain: host });
  const transport = createMailTransport({ smtpUrl: deps.smtpUrl, dataDir: deps.dataDir, clock: deps.clock });
  const mailWorker = createMailWorker({
    db: deps.db, dialect: deps.dialect, sealer: deps.sealer, clock: deps.clock, transport,
    from: deps.mailFrom ?? `Latchkey <no-reply@${host.includes('.') ? host : `${host}.invalid`}>`,
    logger: deps.mailLogger,
  });
  return { outbox, worker: mailWorker, close: () => transport.close() };
}
