/** HTTP for /admin/webhooks/create|getall|delete (DESIGN: Webhooks). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../http/schemas.ts';
import { deletedResponse, errorResponses, successResponse } from '../identity/applications/schemas.ts';
import { WEBHOOK_EVENT_PATTERN, WEBHOOK_EVENTS_MAX, WEBHOOK_URL_MAX_LENGTH } from './rules.ts';
import type { WebhooksService } from './service.ts';
import type { Webhook } from './types.ts';

const webhookSchema = {
  type: 'object',
  required: ['webhookId', 'url', 'events', 'enabled', 'createdDttm'],
  properties: {
    webhookId: { type: 'string', description: 'wh_…' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    enabled: { type: 'boolean', description: 'false once the endpoint answered 410 Gone' },
    createdDttm: { type: 'integer', description: 'Epoch milliseconds' },
  },
} as const;

/** The listing record: never the secret. */
export function toWireWebhook(webhook: Webhook) {
  return { webhookId: webhook.webhookId, url: webhook.url, events: webhook.events, enabled: webhook.enabled, createdDttm: webhook.createdAt };
}

export async function webhookRoutes(app: FastifyInstance, opts: { webhooks: WebhooksService }): Promise<void> {
  const { webhooks } = opts;
  const tags = ['Webhooks'];

  app.post('/admin/webhooks/create', {
    schema: {
      tags,
      summary: 'Create a webhook endpoint for the audit events whose action starts with one of `events`; its signing secret is in this response only',
      body: {
        type: 'object',
        required: ['customerKey', 'url', 'events'],
        properties: {
          customerKey: customerKeySchema,
          url: { type: 'string', minLength: 1, maxLength: WEBHOOK_URL_MAX_LENGTH, description: 'https:// (http:// only with LATCHKEY_WEBHOOKS_ALLOW_HTTP=true)' },
          events: { type: 'array', minItems: 1, maxItems: WEBHOOK_EVENTS_MAX, items: { type: 'string', pattern: WEBHOOK_EVENT_PATTERN }, description: 'Action prefixes, e.g. ["user."]; ["*"] for every event' },
        },
      },
      response: {
        200: successResponse({ webhookId: { type: 'string' }, secret: { type: 'string', description: 'whsec_…: shown once; verifies the webhook-signature header' } }, ['webhookId', 'secret']),
        ...errorResponses(),
      },
    },
  }, async (request, reply) => {
    const { url, events } = request.body as { url: string; events: string[] };
    const created = await webhooks.create(request.customer.id, { url, events }, request.auditContext);
    request.log.info({ webhookId: created.webhook.webhookId }, 'webhook created');
    // The only response that carries the secret: no cache may keep it.
    reply.header('cache-control', 'no-store');
    return { status: 'SUCCESS', webhookId: created.webhook.webhookId, secret: created.secret };
  });

  app.post('/admin/webhooks/getall', {
    schema: {
      tags,
      summary: 'List the customer\'s webhook endpoints in creation order (no secrets)',
      body: { type: 'object', required: ['customerKey'], properties: { customerKey: customerKeySchema } },
      response: { 200: successResponse({ webhooks: { type: 'array', items: webhookSchema } }, ['webhooks']), ...errorResponses() },
    },
  }, async (request) => {
    const list = await webhooks.list(request.customer.id);
    return { status: 'SUCCESS', webhooks: list.map(toWireWebhook) };
  });

  app.post('/admin/webhooks/delete', {
    schema: {
      tags,
      summary: 'Delete a webhook endpoint and its deliveries; nothing more is sent to it',
      body: {
        type: 'object',
        required: ['customerKey', 'webhookId'],
        properties: { customerKey: customerKeySchema, webhookId: { type: 'string', minLength: 1, maxLength: 100 } },
      },
      response: { 200: deletedResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const { webhookId } = request.body as { webhookId: string };
    await webhooks.delete(request.customer.id, webhookId, request.auditContext);
    request.log.info({ webhookId }, 'webhook deleted');
    return { status: 'SUCCESS', message: 'Webhook deleted.' };
  });
}

/** The webhook routes as an `areas` entry of the admin API. */
export const webhooksArea = (webhooks: WebhooksService) => (app: FastifyInstance) => webhookRoutes(app, { webhooks });
