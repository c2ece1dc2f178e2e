/** HTTP for POST /admin/audit/getall (DESIGN: Audit log). Read only: no face changes or deletes an event. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../http/schemas.ts';
import { errorResponses, successResponse } from '../identity/applications/schemas.ts';
import { MAX_PAGE, type AuditService } from './service.ts';

const epochMs = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Epoch milliseconds, inclusive' } as const;

const eventSchema = {
  type: 'object',
  required: ['eventId', 'time', 'action', 'actor', 'target', 'ip', 'requestId', 'correlationId'],
  properties: {
    eventId: { type: 'string', description: 'UUID' },
    time: { type: 'integer', description: 'Epoch milliseconds' },
    action: { type: 'string', description: 'e.g. user.created (the catalogue: docs/audit-and-webhooks.md)' },
    actor: {
      type: 'object', required: ['type', 'id'],
      properties: { type: { type: 'string', enum: ['api', 'oauth-client', 'console', 'cli', 'scim', 'user', 'system'] }, id: { type: 'string' } },
    },
    target: { type: 'object', required: ['type', 'id', 'name'], properties: { type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } } },
    ip: { type: 'string' },
    requestId: { type: 'string' },
    correlationId: { type: 'string', description: '"" where the request had none' },
  },
} as const;

interface GetAllBody { limit: number; cursor?: string; action?: string; from?: number; to?: number; targetId?: string }

export async function auditRoutes(app: FastifyInstance, opts: { audit: AuditService }): Promise<void> {
  app.post('/admin/audit/getall', {
    schema: {
      tags: ['Audit log'],
      summary: 'The customer\'s audit events, newest first, one page at a time; events written meanwhile never shift a page',
      body: {
        type: 'object',
        required: ['customerKey', 'limit'],
        properties: {
          customerKey: customerKeySchema,
          limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE },
          cursor: { type: 'string', maxLength: 64, description: 'nextCursor of the previous page; absent or "": the newest page' },
          action: { type: 'string', maxLength: 100, description: 'An action or its prefix, e.g. "user." or "user.created"' },
          from: epochMs,
          to: epochMs,
          targetId: { type: 'string', maxLength: 200, description: 'Only events whose target has this id (a user: its userId)' },
        },
      },
      response: {
        200: successResponse({
          events: { type: 'array', items: eventSchema },
          nextCursor: { type: 'string', description: 'The next (older) page\'s cursor; "" at the end' },
        }, ['events', 'nextCursor']),
        ...errorResponses(),
      },
    },
  }, async (request) => {
    const { limit, cursor, action, from, to, targetId } = request.body as GetAllBody;
    const page = await opts.audit.list(request.customer.id, { limit, cursor, action, from, to, targetId });
    return { status: 'SUCCESS', ...page };
  });
}

/** The audit routes as an `areas` entry of the admin API. */
export const auditArea = (audit: AuditService) => (app: FastifyInstance) => auditRoutes(app, { audit });
