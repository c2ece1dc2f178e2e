/**
 * Issue 27's read figure: signed audit/getall (limit 100) at 1,000,000 events of the bench customer,
 * the newest page (no cursor) and the oldest (the cursor that reaches it, found once before timing),
 * each against a ceiling serving the same body. The events are seeded straight through the store in
 * batched inserts (bench/seed.ts), not through the API: a million signed writes would take an hour.
 */
import { sql } from 'kysely';
import { encodeCursor } from '../../src/audit/cursor.ts';
import type { Scenario } from '../harness.ts';
import { seedAuditEvents } from '../seed.ts';

export const AUDIT_EVENTS = 1_000_000;
const LIMIT = 100;

/** The query plan of `query` on this store, one line (what the last page's reading costs, by design). */
async function plan(bench: Parameters<Scenario['run']>[0], query: string, values: unknown[]): Promise<string> {
  const { db, dialect } = bench.composition.store;
  if (dialect === 'sqlite') {
    const rows = await sql<{ detail: string }>`explain query plan ${sql.raw(query.replace(/\?/g, () => String(values.shift())))}`.execute(db);
    return rows.rows.map((r) => r.detail).join('; ');
  }
  const rows = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(query.replace(/\$(\d+)/g, (_, n: string) => String(values[Number(n) - 1])))}`.execute(db);
  return rows.rows.map((r) => r['QUERY PLAN'].trim()).join('; ');
}

export const auditRead: Scenario = {
  name: 'audit-read',
  summary: `signed POST /api/admin/audit/getall limit ${LIMIT} at ${AUDIT_EVENTS.toLocaleString('en-US')} events: the newest page vs ceiling, the oldest page vs ceiling`,
  async run(bench) {
    const { customerId, customerKey } = bench.customer;
    const { db } = bench.composition.store;
    const count = async () => Number((await db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).where('customer_id', '=', customerId).executeTakeFirstOrThrow()).n);
    const have = await count();
    if (have < AUDIT_EVENTS) {
      const seeded = await seedAuditEvents(bench.composition.store, customerId, AUDIT_EVENTS - have);
      bench.note(`seeded ${seeded.users.toLocaleString('en-US')} audit events in ${seeded.seconds.toFixed(1)} s (batched inserts through the store)`);
    }
    // The oldest page's cursor: the id of the event just above the oldest LIMIT (one query, before timing).
    const above = await db.selectFrom('audit_events').select('id').where('customer_id', '=', customerId).orderBy('id', 'asc').offset(LIMIT).limit(1).executeTakeFirstOrThrow();
    const cursor = encodeCursor(Number(above.id));
    const page = (c?: string) => bench.admin('/api/admin/audit/getall', { customerKey, limit: LIMIT, ...(c ? { cursor: c } : {}) });
    const newest = await bench.composition.services.audit.list(customerId, { limit: LIMIT });
    const oldest = await bench.composition.services.audit.list(customerId, { limit: LIMIT, cursor });
    if (newest.events.length !== LIMIT || oldest.events.length !== LIMIT || oldest.nextCursor !== '') {
      throw new Error(`audit-read: the pages are not what they should be (${newest.events.length}, ${oldest.events.length}, next "${oldest.nextCursor}")`);
    }
    for (const [label, beforeId] of [['newest', undefined], ['oldest', Number(above.id)]] as const) {
      const compiled = db.selectFrom('audit_events').selectAll().where('customer_id', '=', customerId)
        .$if(beforeId !== undefined, (q) => q.where('id', '<', beforeId!)).orderBy('id', 'desc').limit(LIMIT + 1).compile();
      bench.note(`${label} page plan (${bench.store}): ${await plan(bench, compiled.sql, [...compiled.parameters])}`);
    }
    bench.note(`${(await count()).toLocaleString('en-US')} events of the bench customer`);
    await bench.compare('audit/getall newest page', page(), undefined);
    await bench.compare('audit/getall oldest page', page(cursor), undefined);
  },
};
