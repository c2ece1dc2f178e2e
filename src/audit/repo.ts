/** Queries on audit_events: insert, the newest-first page, and the retention purge. */
import { CompiledQuery } from 'kysely';
import type { Executor } from '../store/db.ts';
import type { AuditEvent } from './types.ts';

export interface EventFilter {
  /** Only ids below this one (the cursor); undefined: from the newest. */
  beforeId?: number;
  /** Byte-order range [actionFrom, actionTo) that holds exactly the actions starting with the prefix. */
  actionRange?: [string, string];
  from?: number;
  to?: number;
  targetId?: string;
  targetType?: string;
}

export interface StoredEvent { id: number; event: AuditEvent }

const rowOf = (customerId: number, event: AuditEvent) => ({
  customer_id: customerId,
  event_id: event.eventId,
  time: event.time,
  action: event.action,
  actor_type: event.actor.type,
  actor_id: event.actor.id,
  target_type: event.target.type,
  target_id: event.target.id,
  target_name: event.target.name,
  ip: event.ip,
  request_id: event.requestId,
  correlation_id: event.correlationId,
});

/**
 * The insert's SQL, compiled once per dialect (keyed by the executor's adapter, which a transaction
 * shares with its database). Every change writes an event inside its own transaction: building
 * Kysely's query tree for twelve values each time cost more than running the statement (the bench's
 * CPU profile of users/update), and it ran while the change's transaction held the connection.
 */
const insertSql = new WeakMap<object, string>();

export async function insertEvent(db: Executor, customerId: number, event: AuditEvent): Promise<void> {
  const row = rowOf(customerId, event);
  const values = Object.values(row);
  const adapter = db.getExecutor().adapter;
  const known = insertSql.get(adapter);
  if (known !== undefined) {
    await db.executeQuery(CompiledQuery.raw(known, values));
    return;
  }
  const compiled = db.insertInto('audit_events').values(row).compile();
  // Kept only when its parameters are the row's values in order, as they are reused for every event.
  if (compiled.parameters.length === values.length && compiled.parameters.every((value, i) => value === values[i])) insertSql.set(adapter, compiled.sql);
  await db.executeQuery(compiled);
}

/** Up to `limit` events of this customer matching `filter`, newest (highest id) first. */
export async function listEvents(db: Executor, customerId: number, filter: EventFilter, limit: number): Promise<StoredEvent[]> {
  if (!filter.actionRange) return listWhere(db, customerId, filter, undefined, limit);
  // A prefix spans several actions, and no index yields a range of actions in id order: reading the range
  // and sorting it cost seconds at a million events. Instead each action in the range (a few, found by index
  // seeks) is read newest first on its own index, and the pages are merged.
  const pages = [];
  for (const action of await actionsInRange(db, customerId, filter.actionRange)) pages.push(await listWhere(db, customerId, filter, action, limit));
  return pages.flat().sort((a, b) => b.id - a.id).slice(0, limit);
}

/** The distinct actions of this customer in [from, to), one index seek each. */
async function actionsInRange(db: Executor, customerId: number, [from, to]: [string, string]): Promise<string[]> {
  const actions: string[] = [];
  for (;;) {
    let query = db.selectFrom('audit_events').select('action').where('customer_id', '=', customerId).where('action', '<', to);
    query = actions.length === 0 ? query.where('action', '>=', from) : query.where('action', '>', actions[actions.length - 1]!);
    const row = await query.orderBy('action').limit(1).executeTakeFirst();
    if (!row) return actions;
    actions.push(row.action);
  }
}

async function listWhere(db: Executor, customerId: number, filter: EventFilter, action: string | undefined, limit: number): Promise<StoredEvent[]> {
  let query = db.selectFrom('audit_events').selectAll().where('customer_id', '=', customerId);
  if (action !== undefined) query = query.where('action', '=', action);
  if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
  if (filter.from !== undefined) query = query.where('time', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('time', '<=', filter.to);
  if (filter.targetId !== undefined) query = query.where('target_id', '=', filter.targetId);
  if (filter.targetType !== undefined) query = query.where('target_type', '=', filter.targetType);
  const rows = await query.orderBy('id', 'desc').limit(limit).execute();
  return rows.map((row) => ({
    id: Number(row.id),
    event: {
      eventId: row.event_id,
      time: Number(row.time),
      action: row.action,
      actor: { type: row.actor_type as AuditEvent['actor']['type'], id: row.actor_id },
      target: { type: row.target_type, id: row.target_id, name: row.target_name },
      ip: row.ip,
      requestId: row.request_id,
      correlationId: row.correlation_id,
    },
  }));
}

/** The customers that have events older than `before` (the purge walks them one at a time). */
export async function customersWithEventsBefore(db: Executor, before: number): Promise<number[]> {
  const rows = await db.selectFrom('customers').select('id')
    .where(({ exists, selectFrom }) => exists(selectFrom('audit_events').select('audit_events.id')
      .whereRef('audit_events.customer_id', '=', 'customers.id').where('audit_events.time', '<', before)))
    .execute();
  return rows.map((row) => Number(row.id));
}

/** Deletes up to `batch` of this customer's events older than `before`, oldest first; returns how many. */
export async function deleteEventsBefore(db: Executor, customerId: number, before: number, batch: number): Promise<number> {
  const ids = await db.selectFrom('audit_events').select('id')
    .where('customer_id', '=', customerId).where('time', '<', before)
    .orderBy('time').limit(batch).execute();
  if (ids.length === 0) return 0;
  const result = await db.deleteFrom('audit_events').where('customer_id', '=', customerId).where('id', 'in', ids.map((row) => Number(row.id))).executeTakeFirst();
  return Number(result.numDeletedRows);
}
