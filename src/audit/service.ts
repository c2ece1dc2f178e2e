/**
 * The audit log: one event per change, written with the caller's executor so the event exists
 * exactly when the change commits; read newest first with a cursor that new events cannot shift.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import { Invalid } from '../lib/errors.ts';
import type { Executor } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { AuditContext } from './context.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import * as repo from './repo.ts';
import type { AuditEvent, AuditPage, AuditQuery, AuditTarget } from './types.ts';

export interface AuditRecorder {
  /** Writes one event with `executor` — the caller's transaction, so the event exists exactly when the change commits — and runs the listeners (webhooks' enqueue) in it too. Actor, ip, requestId, correlationId come from `context`. */
  record(executor: Executor, customerId: number, event: { action: string; target: AuditTarget }, context: AuditContext): Promise<AuditEvent>;
}

export type AuditListener = (executor: Executor, customerId: number, event: AuditEvent) => Promise<void>;

export interface AuditService extends AuditRecorder {
  list(customerId: number, query: AuditQuery): Promise<AuditPage>;
  /** Compose registers the webhooks' listener here once, before serving. */
  addListener(listener: AuditListener): void;
}

export const MAX_PAGE = 500;
/** Actions are lowercase dotted words; a filter outside printable ASCII could not match one. */
const ACTION_PREFIX = /^[\x21-\x7e]{1,100}$/;

/** The half-open byte range holding exactly the strings that start with `prefix` (ASCII). */
function prefixRange(prefix: string): [string, string] {
  const last = prefix.charCodeAt(prefix.length - 1);
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)];
}

function checkQuery(query: AuditQuery): void {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_PAGE) throw new Invalid('limit', `must be 1..${MAX_PAGE}`);
  if (query.action !== undefined && query.action !== '' && !ACTION_PREFIX.test(query.action)) throw new Invalid('action', 'must be an action or its prefix, e.g. user.');
  for (const field of ['from', 'to'] as const) {
    const value = query[field];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) throw new Invalid(field, 'must be epoch milliseconds');
  }
  if (query.targetId !== undefined && query.targetId.length > 200) throw new Invalid('targetId', 'is too long');
}

export function createAuditService(deps: { db: Kysely<Database>; clock: Clock }): AuditService {
  const listeners: AuditListener[] = [];
  return {
    async record(executor, customerId, { action, target }, context) {
      const event: AuditEvent = {
        eventId: randomUUID(),
        time: deps.clock.now(),
        action,
        actor: { type: context.actor.type, id: context.actor.id },
        target: { type: target.type, id: target.id, name: target.name },
        ip: context.ip,
        requestId: context.requestId,
        correlationId: context.correlationId,
      };
      await repo.insertEvent(executor, customerId, event);
      for (const listener of listeners) await listener(executor, customerId, event);
      return event;
    },

    async list(customerId, query) {
      checkQuery(query);
      const filter: repo.EventFilter = {
        beforeId: query.cursor ? decodeCursor(query.cursor) : undefined,
        actionRange: query.action ? prefixRange(query.action) : undefined,
        from: query.from,
        to: query.to,
        targetId: query.targetId === '' ? undefined : query.targetId,
        targetType: query.targetType,
      };
      // One more than asked: whether an older page exists, without a second query.
      const rows = await repo.listEvents(deps.db, customerId, filter, query.limit + 1);
      const page = rows.slice(0, query.limit);
      return {
        events: page.map((row) => row.event),
        nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]!.id) : '',
      };
    },

    addListener(listener) {
      listeners.push(listener);
    },
  };
}
