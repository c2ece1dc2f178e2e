/**
 * Drains the mail outbox on the shared outbox loop (src/outbox/: leased claims, so every node may
 * run a worker and a crashed one's rows come back): renders each mail from its unsealed parameters,
 * sends it with its fixed Message-ID, and marks it sent (dropping the parameters) or schedules a
 * retry. Never logs a link or sealed data.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import { createOutboxWorker, describeError, type OutboxWorker } from '../outbox/worker.ts';
import type { Dialect } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { parseSender, type MailAddress } from './addresses.ts';
import { claimDueMails, markMailAttemptFailed, markMailSent, sealedDataAad, type ClaimedMail } from './outbox.ts';
import { isTemplateName, renderMail } from './templates.ts';
import type { MailTransport } from './transport.ts';

/** pino's logger fits; only ids, counts and redacted reasons are ever passed. */
export interface MailLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface MailWorkerOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  sealer: Sealer;
  clock: Clock;
  transport: MailTransport;
  /** `LATCHKEY_MAIL_FROM`: `addr@host` or `Name <addr@host>`. */
  from: string;
  /** Names this worker's claims; default `<hostname>:<pid>:<random>`. */
  workerId?: string;
  /** Rows claimed (and sent concurrently, over the transport's pooled connections) per batch. Default 50. */
  batchSize?: number;
  /** Wait between batches when the outbox had nothing more. Default 1000 ms. */
  pollIntervalMs?: number;
  /**
   * How long a kick() waits for others before its batch starts. Default 50 ms: a burst of commits
   * (one per generate) shares one claim and one batch instead of each starting its own.
   */
  kickDelayMs?: number;
  /** How long a claim holds before another worker may take the row. Default 5 min: above a batch's bounded send time. */
  leaseMs?: number;
  logger?: MailLogger;
}

/** The outbox loop (src/outbox/worker.ts) over the mail outbox. */
export type MailWorker = OutboxWorker;

/** @throws Invalid when `from` is not one address. */
export function createMailWorker(options: MailWorkerOptions): MailWorker {
  const { db, dialect, sealer, clock, transport, logger } = options;
  const from = parseSender(options.from);
  const leaseMs = options.leaseMs ?? 5 * 60_000;
  const worker = createOutboxWorker<ClaimedMail>({
    workerId: options.workerId,
    batchSize: options.batchSize,
    pollIntervalMs: options.pollIntervalMs,
    kickDelayMs: options.kickDelayMs,
    claim: (limit, workerId) => claimDueMails(db, dialect, { workerId, now: clock.now(), leaseMs, limit }),
    async process(claimed) {
      const results = await Promise.all(claimed.map((mail) => deliver(mail, from)));
      const sent = claimed.filter((_, i) => results[i]);
      await markSent(sent);
      return sent.length;
    },
    onBatchError: (error) => logger?.error({ err: describeError(error) }, 'mail batch failed'),
  });
  const { workerId } = worker;

  /**
   * One transaction for the batch's sent mails, not one commit each (a commit is the dearest part
   * of a small write). Until it commits, a crash leaves them to be sent again after the lease, with
   * the same Message-ID: delivery is at least once either way.
   */
  async function markSent(mails: ClaimedMail[]): Promise<void> {
    if (mails.length === 0) return;
    const now = clock.now();
    try {
      await db.transaction().execute(async (trx) => {
        for (const mail of mails) await markMailSent(trx, mail.id, now);
      });
    } catch (error) {
      // Sent but not marked: the lease runs out and the mails go again, with the same Message-IDs.
      logger?.error({ mailIds: mails.map((m) => m.id), err: describeError(error) }, 'mails sent but not marked sent');
    }
  }

  async function deliver(mail: ClaimedMail, sender: MailAddress): Promise<boolean> {
    let secrets: string[] = [];
    let rendered;
    try {
      if (!isTemplateName(mail.template) || mail.sealedData === null) throw new Error('unknown template or no data');
      const params = JSON.parse(sealer.open(mail.sealedData, sealedDataAad(mail.messageId)));
      secrets = Object.values(params).filter((v): v is string => typeof v === 'string' && /^https?:/.test(v));
      rendered = renderMail(mail.template, params);
    } catch {
      // No retry can open or render these parameters (another master key, a template gone).
      await recordFailure(mail, 'the mail could not be rendered from its stored parameters', true);
      return false;
    }
    try {
      await transport.send({ from: sender, to: mail.to, messageId: mail.messageId, ...rendered });
    } catch (error) {
      await recordFailure(mail, redact(describeError(error), secrets), false);
      return false;
    }
    return true;
  }

  async function recordFailure(mail: ClaimedMail, reason: string, permanent: boolean): Promise<void> {
    try {
      const status = await markMailAttemptFailed(db, mail, { workerId, now: clock.now(), error: reason, permanent });
      const fields = { mailId: mail.id, messageId: mail.messageId, attempt: mail.attempts + 1, reason };
      if (status === 'failed') logger?.error(fields, 'mail given up');
      else logger?.warn(fields, 'mail not sent; will retry');
    } catch (error) {
      // The lease runs out and the mail is claimed again.
      logger?.error({ mailId: mail.id, err: describeError(error) }, 'mail failure not recorded');
    }
  }

  return worker;
}

/** An SMTP server may echo parts of a message in its reply; a link never reaches a log or a row. */
function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join('[redacted]');
  return out;
}
