/**
 * Drains the outbox: claims due rows (a lease, so every node may run a worker and a crashed one's
 * rows come back), renders each from its unsealed parameters, sends it with its fixed Message-ID,
 * and marks it sent (dropping the parameters) or schedules a retry. Never logs a link or sealed data.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
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

export interface MailWorker {
  /** Runs a batch now, then keeps polling (timer unref'd); a second start is a no-op. */
  start(): void;
  /** Stops polling and waits for the batch in progress. */
  stop(): Promise<void>;
  /** One batch; resolves with the number of mails sent (0 when a batch is already running here). */
  runOnce(): Promise<number>;
  /**
   * Asks for a batch soon (after a commit that enqueued a mail): within kickDelayMs, shared with the
   * kicks that follow in that time (later kicks never postpone it). A no-op until started.
   */
  kick(): void;
  readonly workerId: string;
}

/** @throws Invalid when `from` is not one address. */
export function createMailWorker(options: MailWorkerOptions): MailWorker {
  const { db, dialect, sealer, clock, transport, logger } = options;
  const from = parseSender(options.from);
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const batchSize = options.batchSize ?? 50;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const kickDelayMs = options.kickDelayMs ?? 50;
  const leaseMs = options.leaseMs ?? 5 * 60_000;

  let running: Promise<number> | undefined;
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now() time). */
  let timerDue = 0;
  /** The last batch was full: more may be waiting at once. */
  let fullBatch = false;
  /** Mails were committed (kick, or runOnce refused) while a batch ran. */
  let kicked = false;

  async function runOnce(): Promise<number> {
    if (running) {
      kicked = true;
      return 0;
    }
    running = runBatch().finally(() => { running = undefined; });
    return running;
  }

  async function runBatch(): Promise<number> {
    const claimed = await claimDueMails(db, dialect, { workerId, now: clock.now(), leaseMs, limit: batchSize });
    if (claimed.length === 0) return 0;
    const results = await Promise.all(claimed.map((mail) => deliver(mail, from)));
    const sent = claimed.filter((_, i) => results[i]);
    await markSent(sent);
    // A full batch means more may be waiting.
    if (claimed.length === batchSize) fullBatch = true;
    return sent.length;
  }

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
      logger?.error({ mailIds: mails.map((m) => m.id), err: describe(error) }, 'mails sent but not marked sent');
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
      await recordFailure(mail, redact(describe(error), secrets), false);
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
      logger?.error({ mailId: mail.id, err: describe(error) }, 'mail failure not recorded');
    }
  }

  function schedule(delayMs: number): void {
    if (!started) return;
    if (timer) clearTimeout(timer);
    timerDue = performance.now() + delayMs;
    timer = setTimeout(() => { void tick(); }, delayMs);
    // The server's sockets keep the process alive, not the mail worker.
    timer.unref();
  }

  async function tick(): Promise<void> {
    timer = undefined;
    try {
      // A batch started by runOnce() or kick() meanwhile: let it finish, then run ours.
      if (running) await running.catch(() => {});
      await runOnce();
    } catch (error) {
      logger?.error({ err: describe(error) }, 'mail batch failed');
    }
    const next = fullBatch ? 0 : kicked ? kickDelayMs : pollIntervalMs;
    fullBatch = false;
    kicked = false;
    schedule(next);
  }

  return {
    workerId,
    start() {
      if (started) return;
      started = true;
      schedule(0);
    },
    async stop() {
      started = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
    runOnce,
    kick() {
      if (!started) return;
      if (running) kicked = true;
      // A batch already due within the delay takes this mail too; only a later one (the poll) is brought forward.
      else if (!timer || timerDue > performance.now() + kickDelayMs) schedule(kickDelayMs);
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/** An SMTP server may echo parts of a message in its reply; a link never reaches a log or a row. */
function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join('[redacted]');
  return out;
}
