/**
 * Delivers webhooks on the shared outbox loop (src/outbox/: leased claims, so every node may run a
 * worker, each delivery is one node's at a time, and a crashed node's come back): signs each
 * attempt afresh, POSTs it, and records the answer. A 2xx ends it; a 410 disables the endpoint;
 * anything else is retried after the schedule's next wait, and fails once the schedule is spent.
 */
import type { Kysely } from 'kysely';
import type { AuditEvent } from '../audit/types.ts';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import { claimDueRows } from '../outbox/claim.ts';
import { createOutboxWorker, describeError, type OutboxWorker } from '../outbox/worker.ts';
import type { Dialect } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { postWebhook, signedHeaders, webhookBody } from './delivery.ts';
import * as repo from './repo.ts';
import type { TargetPolicy } from './rules.ts';
import { sealedSecretAad } from './service.ts';
import { RefusedTarget } from './targets.ts';

/** pino's logger fits; only ids, statuses and reasons are passed, never a secret or a body. */
export interface WebhookLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface WebhookWorkerOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  sealer: Sealer;
  clock: Clock;
  policy: TargetPolicy;
  /** Seconds to wait before each retry (LATCHKEY_WEBHOOKS_RETRY_SCHEDULE); attempts = its length + 1. */
  retryScheduleSeconds: number[];
  workerId?: string;
  batchSize?: number;
  pollIntervalMs?: number;
  /** Default 2 min: above an attempt's 10 s limit, so a live worker's batch is never taken over. */
  leaseMs?: number;
  logger?: WebhookLogger;
}

type ClaimedDelivery = Awaited<ReturnType<typeof claimDueRows<'webhook_deliveries'>>>[number];

export function createWebhookWorker(options: WebhookWorkerOptions): OutboxWorker {
  const { db, dialect, sealer, clock, policy, retryScheduleSeconds, logger } = options;
  const leaseMs = options.leaseMs ?? 2 * 60_000;

  const worker = createOutboxWorker<ClaimedDelivery>({
    workerId: options.workerId,
    batchSize: options.batchSize,
    pollIntervalMs: options.pollIntervalMs,
    claim: (limit, workerId) => claimDueRows(db, dialect, 'webhook_deliveries', { workerId, now: clock.now(), leaseMs, limit }),
    async process(claimed) {
      const webhooks = await repo.webhooksForDelivery(db, [...new Set(claimed.map((d) => Number(d.webhook_id)))]);
      // One endpoint's deliveries in order, one at a time (endpoints in parallel): after a 410 the rest stop.
      const byEndpoint = new Map<number, ClaimedDelivery[]>();
      for (const delivery of claimed) byEndpoint.set(Number(delivery.webhook_id), [...byEndpoint.get(Number(delivery.webhook_id)) ?? [], delivery]);
      const sent = await Promise.all([...byEndpoint].map(async ([id, deliveries]) => {
        let delivered = 0;
        for (const delivery of deliveries) if (await attempt(delivery, webhooks.get(id))) delivered++;
        return delivered;
      }));
      return sent.reduce((a, b) => a + b, 0);
    },
    onBatchError: (error) => logger?.error({ err: describeError(error) }, 'webhook batch failed'),
  });
  const { workerId } = worker;

  async function attempt(delivery: ClaimedDelivery, webhook: repo.DeliveryEndpoint | undefined): Promise<boolean> {
    const id = Number(delivery.id);
    try {
      if (!webhook?.enabled) {
        await repo.markUndeliverable(db, id, workerId);
        return false;
      }
      const body = webhookBody(JSON.parse(delivery.event) as AuditEvent);
      let status: number | null = null;
      let answer: string | null = null;
      let error: string | null = null;
      try {
        const secret = sealer.open(webhook.sealedSecret, sealedSecretAad(webhook.webhookId));
        const reply = await postWebhook(new URL(webhook.url), body, signedHeaders(secret, delivery.message_id, body, clock.now()), policy);
        status = reply.status;
        answer = reply.body;
        if (status >= 300 && status < 400) error = 'redirect not followed';
      } catch (failure) {
        error = failure instanceof RefusedTarget ? failure.message : describeError(failure);
      }
      const now = clock.now();
      const outcome = { workerId, now, lastStatus: status, lastAnswer: answer, lastError: error };
      if (status !== null && status >= 200 && status < 300) {
        await repo.recordAttempt(db, id, { ...outcome, status: 'delivered' });
        return true;
      }
      if (status === 410) {
        await db.transaction().execute(async (trx) => {
          await repo.recordAttempt(trx, id, { ...outcome, status: 'disabled' });
          await repo.disableWebhook(trx, webhook.id, now);
        });
        webhook.enabled = false;
        logger?.warn({ webhookId: webhook.webhookId }, 'webhook endpoint answered 410 Gone: disabled');
        return false;
      }
      const attempts = Number(delivery.attempts) + 1;
      const wait = retryScheduleSeconds[attempts - 1];
      if (wait === undefined) {
        await repo.recordAttempt(db, id, { ...outcome, status: 'failed' });
        logger?.error({ webhookId: webhook.webhookId, messageId: delivery.message_id, attempts, status, reason: error }, 'webhook delivery given up');
      } else {
        await repo.recordAttempt(db, id, { ...outcome, status: 'pending', nextAttemptAt: now + wait * 1000 });
      }
      return false;
    } catch (failure) {
      // The lease runs out and the delivery is claimed again.
      logger?.error({ deliveryId: id, err: describeError(failure) }, 'webhook attempt not recorded');
      return false;
    }
  }

  return worker;
}
