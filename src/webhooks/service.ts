/**
 * Webhook endpoints: create (secret shown once, stored sealed: it signs every delivery), list,
 * delete, each endpoint's recent deliveries and a resend; and the audit listener that writes one
 * delivery per matching endpoint in the transaction of the event it carries.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../audit/context.ts';
import type { AuditListener, AuditRecorder } from '../audit/service.ts';
import type { AuditEvent } from '../audit/types.ts';
import type { Clock } from '../lib/clock.ts';
import { NotFound } from '../lib/errors.ts';
import type { Sealer } from '../lib/seal.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { createReadCache } from '../store/read-cache.ts';
import type { Database } from '../store/schema.ts';
import * as repo from './repo.ts';
import { checkWebhookEvents, checkWebhookUrl, matchesEvents, type TargetPolicy } from './rules.ts';
import type { CreatedWebhook, Webhook, WebhookDelivery } from './types.ts';

export const WEBHOOK_NOT_FOUND = 'The webhook does not exist.';
export const DELIVERY_NOT_FOUND = 'The delivery does not exist.';

/** What a sealed secret is bound to: copying its ciphertext onto another endpoint does not open it. */
export const sealedSecretAad = (webhookId: string): string => `webhooks:${webhookId}`;

export const newMessageId = (): string => `msg_${randomUUID().replaceAll('-', '')}`;

export interface WebhooksService {
  /** @throws Invalid naming `url` or `events`. */
  create(customerId: number, input: { url: string; events: unknown }, context: AuditContext): Promise<CreatedWebhook>;
  list(customerId: number): Promise<Webhook[]>;
  /** @throws NotFound for an unknown webhook id (another customer's included). */
  delete(customerId: number, webhookId: string, context: AuditContext): Promise<void>;
  /** The endpoint's latest deliveries, newest first. @throws NotFound */
  deliveries(customerId: number, webhookId: string, limit?: number): Promise<WebhookDelivery[]>;
  /**
   * Sends a delivery's event again to its endpoint as a new delivery with the same message id
   * (webhook-id): it is the same message, so a receiver that already has it may drop it.
   * @throws NotFound for an unknown delivery or a disabled endpoint's.
   */
  resend(customerId: number, deliveryId: number): Promise<WebhookDelivery>;
  /** The audit listener (compose registers it): one pending delivery per enabled endpoint the event matches. */
  enqueue: AuditListener;
}

export interface WebhooksDeps {
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  audit: AuditRecorder;
  policy: TargetPolicy;
  /** After a commit that wrote deliveries: the worker runs soon instead of at its next poll. */
  deliveriesEnqueued?: () => void;
  /** The change feed that keeps each customer's enabled endpoints in memory; undefined: read every time. */
  changes?: ChangeFeed;
}

export function createWebhooksService(deps: WebhooksDeps): WebhooksService {
  const { db, clock, sealer, audit, policy } = deps;
  // Every recorded event looks up its customer's enabled endpoints: most customers have none, and
  // the list changes rarely, so it is kept (an empty list included) and read again after any write
  // to `webhooks`, on this node or another (the change feed; issue 27's write cost).
  const enabledByCustomer = createReadCache<Webhook[]>(deps.changes, { tables: ['webhooks'], maxEntries: 10_000, clock });

  /**
   * The endpoints an event in `executor`'s transaction goes to. Events about an endpoint
   * (webhook.created, webhook.deleted) are recorded in the transaction that writes it, which the
   * kept list cannot know yet: those read the table in the transaction, as every event did before.
   */
  const enabledWebhooks = async (executor: Parameters<AuditListener>[0], customerId: number, event: AuditEvent): Promise<Webhook[]> => {
    if (event.target.type === 'webhook') return repo.enabledWebhooks(executor, customerId);
    return (await enabledByCustomer.read(String(customerId), () => repo.enabledWebhooks(executor, customerId))) ?? [];
  };

  return {
    async create(customerId, input, context) {
      const url = checkWebhookUrl(input.url, policy).href;
      const events = checkWebhookEvents(input.events);
      const webhookId = `wh_${randomUUID().replaceAll('-', '')}`;
      // The Standard Webhooks secret format: `whsec_` and the base64 of the key (32 random bytes).
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const webhook = await db.transaction().execute(async (trx) => {
        const created = await repo.insertWebhook(trx, customerId, { webhookId, url, events, sealedSecret: sealer.seal(secret, sealedSecretAad(webhookId)), now: clock.now() });
        await audit.record(trx, customerId, { action: 'webhook.created', target: { type: 'webhook', id: webhookId, name: url } }, context);
        return created;
      });
      return { webhook, secret };
    },

    list: (customerId) => repo.listWebhooks(db, customerId),

    async delete(customerId, webhookId, context) {
      await db.transaction().execute(async (trx) => {
        const webhook = await repo.findWebhook(trx, customerId, webhookId);
        if (!webhook) throw new NotFound('webhook', WEBHOOK_NOT_FOUND);
        await repo.deleteWebhook(trx, customerId, webhook.id);
        await audit.record(trx, customerId, { action: 'webhook.deleted', target: { type: 'webhook', id: webhookId, name: webhook.url } }, context);
      });
    },

    async deliveries(customerId, webhookId, limit = 20) {
      const webhook = await repo.findWebhook(db, customerId, webhookId);
      if (!webhook) throw new NotFound('webhook', WEBHOOK_NOT_FOUND);
      return repo.listDeliveries(db, customerId, webhook, limit);
    },

    async resend(customerId, deliveryId) {
      const original = await repo.findDelivery(db, customerId, deliveryId);
      const webhook = original && (await repo.listWebhooks(db, customerId)).find((w) => w.id === Number(original.webhook_id));
      if (!original || !webhook?.enabled) throw new NotFound('delivery', DELIVERY_NOT_FOUND);
      const event = JSON.parse(original.event) as AuditEvent;
      const id = await repo.insertDelivery(db, customerId, { webhookId: webhook.id, messageId: original.message_id, event, now: clock.now() });
      deps.deliveriesEnqueued?.();
      return repo.toDelivery((await repo.findDelivery(db, customerId, id))!, webhook.webhookId);
    },

    async enqueue(executor, customerId, event) {
      const webhooks = (await enabledWebhooks(executor, customerId, event)).filter((w) => matchesEvents(w.events, event.action));
      if (webhooks.length === 0) return;
      const now = clock.now();
      let written = false;
      for (const webhook of webhooks) {
        // An endpoint the kept list still holds but that was deleted or disabled meanwhile gets nothing.
        if (await repo.insertDeliveryIfEnabled(executor, customerId, { webhookId: webhook.id, messageId: newMessageId(), event, now })) written = true;
      }
      if (written) deps.deliveriesEnqueued?.();
    },
  };
}
