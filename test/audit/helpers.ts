/** Shared by the audit tests: writing events straight through the recorder, and reading every page. */
import assert from 'node:assert/strict';
import { SYSTEM } from '../../src/audit/context.ts';
import type { AuditEvent } from '../../src/audit/types.ts';
import type { AdminClient, TestApp } from '../helpers/app.ts';

/** One committed event per call, as a service would write it (its own transaction). */
export async function recordEvents(env: TestApp, customerId: number, count: number, action = 'user.updated', target = (i: number) => ({ type: 'user', id: String(i), name: `user${i}` })): Promise<AuditEvent[]> {
  const { audit } = env.composition.services;
  const events: AuditEvent[] = [];
  for (let i = 0; i < count; i++) {
    events.push(await env.composition.store.db.transaction().execute((trx) => audit.record(trx, customerId, { action, target: target(i) }, SYSTEM)));
  }
  return events;
}

export async function getAll(admin: AdminClient, customerKey: string, body: Record<string, unknown>): Promise<{ events: AuditEvent[]; nextCursor: string }> {
  const response = await admin.post('/admin/audit/getall', { customerKey: Number(customerKey), ...body });
  assert.equal(response.statusCode, 200, response.body);
  const json = response.json();
  assert.equal(json.status, 'SUCCESS');
  return json;
}

/** Follows nextCursor to the end; `between` runs after each page (writes arriving while paging). */
export async function readAllPages(admin: AdminClient, customerKey: string, body: Record<string, unknown>, between?: () => Promise<unknown>): Promise<AuditEvent[]> {
  const all: AuditEvent[] = [];
  let cursor = '';
  for (;;) {
    const page = await getAll(admin, customerKey, { ...body, cursor });
    all.push(...page.events);
    if (page.nextCursor === '') return all;
    cursor = page.nextCursor;
    await between?.();
  }
}
