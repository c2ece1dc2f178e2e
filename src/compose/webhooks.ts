/**
 * Webhooks, built once: the endpoints' service, registered as the audit log's listener (so every
 * recorded event writes its deliveries in its own transaction), and the worker that delivers them
 * (started by compose's `background`, on every node; each delivery is claimed by one).
 */
import type { Kysely } from 'kysely';
import type { AuditService } from '../audit/service.ts';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import type { OutboxWorker } from '../outbox/worker.ts';
import type { ChangeFeed } from '../store/changes.ts';
import type { Dialect } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { createWebhooksService, type WebhooksService } from '../webhooks/service.ts';
import { createWebhookWorker } from '../webhooks/worker.ts';

export interface Webhooks {
  service: WebhooksService;
  /** Delivers; the server starts it (a BackgroundTask), tests call runOnce(). */
  worker: OutboxWorker;
}

export function composeWebhooks(deps: { config: Config; db: Kysely<Database>; dialect: Dialect; clock: Clock; sealer: Sealer; audit: AuditService; changes?: ChangeFeed }): Webhooks {
  const { config, db, dialect, clock, sealer, audit, changes } = deps;
  const policy = { allowHttp: config.webhooks.allowHttp, allowPrivate: config.webhooks.allowPrivate };
  const worker = createWebhookWorker({
    db, dialect, clock, sealer, policy,
    retryScheduleSeconds: config.webhooks.retryScheduleSeconds,
    // Lines docs/operations.md lists: ids, statuses and reasons only.
    logger: {
      warn: (fields, message) => process.stderr.write(`latchkey: ${message}: ${JSON.stringify(fields)}\n`),
      error: (fields, message) => process.stderr.write(`latchkey: ${message}: ${JSON.stringify(fields)}\n`),
    },
  });
  const service = createWebhooksService({ db, clock, sealer, audit, policy, changes, deliveriesEnqueued: () => worker.kick() });
  audit.addListener(service.enqueue);
  return { service, worker };
}
