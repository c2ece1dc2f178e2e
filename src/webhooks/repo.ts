/** Queries on `webhooks` and `webhook_deliveries`. Every read a face asks for is scoped by customer. */
import type { Selectable } from 'kysely';
import type { AuditEvent } from '../audit/types.ts';
import type { Executor } from '../store/db.ts';
import type { WebhookDeliveriesTable, WebhooksTable } from '../store/schema.ts';
import type { DeliveryStatus, Webhook, WebhookDelivery } from './types.ts';

function toWebhook(row: Selectable<WebhooksTable>): Webhook {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    webhookId: row.webhook_id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    enabled: Number(row.enabled) === 1,
    disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
    createdAt: Number(row.created_at),
  };
}

export async function insertWebhook(db: Executor, customerId: number, values: { webhookId: string; url: string; events: string[]; sealedSecret: string; now: number }): Promise<Webhook> {
  const row = await db.insertInto('webhooks').values({
    customer_id: customerId, webhook_id: values.webhookId, url: values.url, events: JSON.stringify(values.events),
    sealed_secret: values.sealedSecret, enabled: 1, disabled_at: null, created_at: values.now,
  }).returningAll().executeTakeFirstOrThrow();
  return toWebhook(row);
}

/** Creation order. */
export async function listWebhooks(db: Executor, customerId: number): Promise<Webhook[]> {
  return (await db.selectFrom('webhooks').selectAll().where('customer_id', '=', customerId).orderBy('id').execute()).map(toWebhook);
}

export async function findWebhook(db: Executor, customerId: number, webhookId: string): Promise<Webhook | undefined> {
  const row = await db.selectFrom('webhooks').selectAll().where('customer_id', '=', customerId).where('webhook_id', '=', webhookId).executeTakeFirst();
  return row && toWebhook(row);
}

/** Deletes the endpoint (its internal id) and its deliveries. */
export async function deleteWebhook(db: Executor, customerId: number, id: number): Promise<void> {
  // SQLite enforces the cascade only with foreign keys on; deleting the deliveries first holds on both.
  await db.deleteFrom('webhook_deliveries').where('customer_id', '=', customerId).where('webhook_id', '=', id).execute();
  await db.deleteFrom('webhooks').where('customer_id', '=', customerId).where('id', '=', id).execute();
}

export async function enabledWebhooks(db: Executor, customerId: number): Promise<Webhook[]> {
  return (await db.selectFrom('webhooks').selectAll().where('customer_id', '=', customerId).where('enabled', '=', 1).execute()).map(toWebhook);
}

/** An endpoint as the worker needs it: with its sealed secret. */
export type DeliveryEndpoint = Webhook & { sealedSecret: string };

/** The endpoints (any customer's) that claimed deliveries go to: for the worker only. */
export async function webhooksForDelivery(db: Executor, ids: number[]): Promise<Map<number, DeliveryEndpoint>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('webhooks').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [Number(row.id), { ...toWebhook(row), sealedSecret: row.sealed_secret }]));
}

/** After a 410: the endpoint takes no more deliveries, and those waiting for it stop. */
export async function disableWebhook(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('webhooks').set({ enabled: 0, disabled_at: now }).where('id', '=', id).where('enabled', '=', 1).execute();
  await db.updateTable('webhook_deliveries').set({ status: 'disabled', claimed_by: null, claimed_until: null })
    .where('webhook_id', '=', id).where('status', '=', 'pending').execute();
}

export async function insertDelivery(db: Executor, customerId: number, values: { webhookId: number; messageId: string; event: AuditEvent; now: number }): Promise<number> {
  const row = await db.insertInto('webhook_deliveries').values({
    customer_id: customerId, webhook_id: values.webhookId, message_id: values.messageId, event: JSON.stringify(values.event),
    status: 'pending', attempts: 0, next_attempt_at: values.now, created_at: values.now,
  }).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

/**
 * The audit listener's delivery: written only while its endpoint exists and is enabled, in the same
 * statement. The listener picks endpoints from a kept list (service.ts) that may trail a delete or a
 * disable made elsewhere by the change feed's delay; such an endpoint gets nothing. True when written.
 */
export async function insertDeliveryIfEnabled(db: Executor, customerId: number, values: { webhookId: number; messageId: string; event: AuditEvent; now: number }): Promise<boolean> {
  const result = await db.insertInto('webhook_deliveries')
    .columns(['customer_id', 'webhook_id', 'message_id', 'event', 'status', 'attempts', 'next_attempt_at', 'created_at'])
    .expression((eb) => eb.selectFrom('webhooks').select([
      'customer_id', 'id',
      eb.val(values.messageId).as('message_id'), eb.val(JSON.stringify(values.event)).as('event'), eb.val('pending').as('status'),
      eb.val(0).as('attempts'), eb.val(values.now).as('next_attempt_at'), eb.val(values.now).as('created_at'),
    ]).where('id', '=', values.webhookId).where('customer_id', '=', customerId).where('enabled', '=', 1))
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export function toDelivery(row: Selectable<WebhookDeliveriesTable>, webhookId: string): WebhookDelivery {
  const event = JSON.parse(row.event) as AuditEvent;
  return {
    id: Number(row.id),
    webhookId,
    messageId: row.message_id,
    action: event.action,
    eventId: event.eventId,
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastAnswer: row.last_answer,
    lastError: row.last_error,
    createdAt: Number(row.created_at),
    deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
  };
}

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(db: Executor, customerId: number, webhook: Webhook, limit: number): Promise<WebhookDelivery[]> {
  const rows = await db.selectFrom('webhook_deliveries').selectAll()
    .where('customer_id', '=', customerId).where('webhook_id', '=', webhook.id)
    .orderBy('id', 'desc').limit(limit).execute();
  return rows.map((row) => toDelivery(row, webhook.webhookId));
}

export async function findDelivery(db: Executor, customerId: number, id: number): Promise<Selectable<WebhookDeliveriesTable> | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('customer_id', '=', customerId).where('id', '=', id).executeTakeFirst();
}

export interface AttemptOutcome {
  workerId: string;
  now: number;
  status: DeliveryStatus;
  /** When pending: the next attempt's time. */
  nextAttemptAt?: number;
  lastStatus: number | null;
  lastAnswer: string | null;
  lastError: string | null;
}

/** Records an attempt of a delivery this worker holds (a lease taken over meanwhile is left alone). */
export async function recordAttempt(db: Executor, id: number, outcome: AttemptOutcome): Promise<void> {
  await db.updateTable('webhook_deliveries')
    .set((eb) => ({
      status: outcome.status,
      attempts: eb('attempts', '+', 1),
      ...(outcome.nextAttemptAt !== undefined ? { next_attempt_at: outcome.nextAttemptAt } : {}),
      ...(outcome.status === 'delivered' ? { delivered_at: outcome.now } : {}),
      claimed_by: null,
      claimed_until: null,
      last_status: outcome.lastStatus,
      last_answer: outcome.lastAnswer,
      last_error: outcome.lastError,
    }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('claimed_by', '=', outcome.workerId)
    .execute();
}

/** Marks a claimed delivery whose endpoint is gone or disabled. */
export async function markUndeliverable(db: Executor, id: number, workerId: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ status: 'disabled', claimed_by: null, claimed_until: null })
    .where('id', '=', id).where('claimed_by', '=', workerId).where('status', '=', 'pending').execute();
}
