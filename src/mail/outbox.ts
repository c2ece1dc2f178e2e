/**
 * The transactional outbox: a mail is a row written in the caller's transaction (so it exists
 * exactly when the change that causes it commits), later claimed, sent and marked by a worker.
 * The template's parameters are sealed under the master key: a magic link never rests in clear.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import { claimDueRows, type ClaimOptions } from '../outbox/claim.ts';
import type { Dialect, Executor } from '../store/db.ts';
import { checkRecipient } from './addresses.ts';
import { renderMail, type MailTemplates, type TemplateName } from './templates.ts';

export type OutboxStatus = 'pending' | 'sent' | 'failed';

export interface OutboxMail<T extends TemplateName = TemplateName> {
  customerId: number;
  template: T;
  /** One bare address (checked). */
  to: string;
  params: MailTemplates[T];
}

export interface Outbox {
  /**
   * Writes the mail's row with `executor` (the caller's transaction); resolves with its id.
   * The parameters are rendered once here, so a mail that could never be sent fails its
   * transaction instead of retrying forever.
   * @throws Invalid when the address or a parameter is malformed.
   */
  enqueue<T extends TemplateName>(executor: Executor, mail: OutboxMail<T>): Promise<number>;
}

export interface OutboxOptions {
  sealer: Sealer;
  clock: Clock;
  /** The right-hand side of generated Message-IDs (the public URL's host name). */
  messageIdDomain?: string;
}

/** What a sealed row is bound to: copying its ciphertext onto another row does not open it. */
export const sealedDataAad = (messageId: string): string => `mail_outbox:${messageId}`;

export function createOutbox({ sealer, clock, messageIdDomain = 'latchkey.invalid' }: OutboxOptions): Outbox {
  if (!/^[A-Za-z0-9.-]+$/.test(messageIdDomain)) throw new Error('messageIdDomain must be a host name');
  return {
    async enqueue(executor, mail) {
      const to = checkRecipient(mail.to);
      renderMail(mail.template, mail.params);
      const messageId = `<${randomUUID()}@${messageIdDomain}>`;
      const now = clock.now();
      const row = await executor.insertInto('mail_outbox').values({
        customer_id: mail.customerId,
        template: mail.template,
        to_address: to,
        sealed_data: sealer.seal(JSON.stringify(mail.params), sealedDataAad(messageId)),
        message_id: messageId,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
      }).returning('id').executeTakeFirstOrThrow();
      return Number(row.id);
    },
  };
}

/** A claimed row, as the worker needs it. */
export interface ClaimedMail {
  id: number;
  customerId: number;
  template: string;
  to: string;
  sealedData: string | null;
  messageId: string;
  attempts: number;
  createdAt: number;
}

/** Claims up to `limit` due mails for `workerId` (src/outbox/claim.ts: one node per row, leases). */
export async function claimDueMails(db: Executor, dialect: Dialect, options: ClaimOptions): Promise<ClaimedMail[]> {
  const rows = await claimDueRows(db, dialect, 'mail_outbox', options);
  return rows.map((r) => ({
    id: Number(r.id),
    customerId: Number(r.customer_id),
    template: r.template,
    to: r.to_address,
    sealedData: r.sealed_data,
    messageId: r.message_id,
    attempts: Number(r.attempts),
    createdAt: Number(r.created_at),
  }));
}

/** Marks a mail sent and drops its sealed parameters. Not tied to the claim: it was sent, whoever holds the row now. */
export async function markMailSent(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('mail_outbox')
    .set((eb) => ({
      status: 'sent',
      sent_at: now,
      sealed_data: null,
      attempts: eb('attempts', '+', 1),
      claimed_by: null,
      claimed_until: null,
      last_error: null,
    }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** Retry policy: 5 s doubling to a 10 min cap, ±20 % jitter; given up (status 'failed') 3 days after enqueue. */
export const RETRY = {
  firstDelayMs: 5_000,
  maxDelayMs: 10 * 60_000,
  jitter: 0.2,
  giveUpAfterMs: 3 * 24 * 60 * 60_000,
} as const;

/** The wait before attempt `attempts + 1`, after `attempts` failed ones (≥ 1). */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(RETRY.maxDelayMs, RETRY.firstDelayMs * 2 ** Math.min(attempts - 1, 30));
  // Jitter spreads the retries of many mails (and of several nodes) after an outage.
  return Math.round(base * (1 - RETRY.jitter + 2 * RETRY.jitter * random()));
}

export interface FailedAttempt {
  workerId: string;
  now: number;
  /** Why, without secrets (src/mail/worker.ts redacts). */
  error: string;
  /** A failure no retry can fix (parameters that no longer open): 'failed' at once. */
  permanent?: boolean;
  random?: () => number;
}

/** Records a failed attempt of a mail this worker holds: retried after the backoff, or 'failed' past the horizon. */
export async function markMailAttemptFailed(db: Executor, mail: ClaimedMail, attempt: FailedAttempt): Promise<OutboxStatus> {
  const attempts = mail.attempts + 1;
  const givingUp = attempt.permanent === true || attempt.now - mail.createdAt >= RETRY.giveUpAfterMs;
  const status: OutboxStatus = givingUp ? 'failed' : 'pending';
  await db.updateTable('mail_outbox')
    .set({
      status,
      attempts,
      next_attempt_at: attempt.now + retryDelayMs(attempts, attempt.random),
      claimed_by: null,
      claimed_until: null,
      last_error: attempt.error.slice(0, 500),
      // A mail given up keeps nothing secret either.
      ...(givingUp ? { sealed_data: null } : {}),
    })
    .where('id', '=', mail.id)
    .where('status', '=', 'pending')
    .where('claimed_by', '=', attempt.workerId)
    .execute();
  return status;
}

/** Row counts by status: for tests, metrics and operators. */
export async function countMails(db: Executor, customerId?: number): Promise<Record<OutboxStatus, number>> {
  let query = db.selectFrom('mail_outbox').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status');
  if (customerId !== undefined) query = query.where('customer_id', '=', customerId);
  const counts: Record<OutboxStatus, number> = { pending: 0, sent: 0, failed: 0 };
  for (const row of await query.execute()) counts[row.status as OutboxStatus] = Number(row.n);
  return counts;
}

export interface OutboxRow {
  id: number;
  customerId: number;
  template: string;
  to: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  messageId: string;
  createdAt: number;
  sentAt: number | null;
  hasSealedData: boolean;
}

/** A customer's mails, oldest first, without their parameters. */
export async function listMails(db: Executor, customerId: number, limit = 100): Promise<OutboxRow[]> {
  const rows = await db.selectFrom('mail_outbox')
    .select(['id', 'customer_id', 'template', 'to_address', 'status', 'attempts', 'next_attempt_at', 'last_error', 'message_id', 'created_at', 'sent_at'])
    .select((eb) => eb.case().when('sealed_data', 'is', null).then(0).else(1).end().as('has_sealed'))
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    customerId: Number(r.customer_id),
    template: r.template,
    to: r.to_address,
    status: r.status as OutboxStatus,
    attempts: Number(r.attempts),
    nextAttemptAt: Number(r.next_attempt_at),
    lastError: r.last_error,
    messageId: r.message_id,
    createdAt: Number(r.created_at),
    sentAt: r.sent_at === null ? null : Number(r.sent_at),
    hasSealedData: Number(r.has_sealed) === 1,
  }));
}
