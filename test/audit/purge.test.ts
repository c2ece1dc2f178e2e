/**
 * The retention purge (LATCHKEY_AUDIT_RETENTION_DAYS, default 90) deletes exactly the events older
 * than the retention, every customer's, and one node of the cluster runs it per interval.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditPurgeJob, DAY_MS, DEFAULT_AUDIT_PURGE_INTERVAL_MS } from '../../src/audit/purge.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { readAllPages, recordEvents } from './helpers.ts';

describeEachStore('audit retention purge', (kind) => {
  test('deletes only events older than the retention, of every customer, by one node per interval', async (t) => {
    const env = await build(t, kind, { LATCHKEY_AUDIT_RETENTION_DAYS: '30' });
    const other = await env.newCustomer();
    const start = env.clock.now();
    const old = [...await recordEvents(env, env.customer.customerId, 3), ...await recordEvents(env, other.customer.customerId, 2)];
    env.clock.advance(10 * DAY_MS);
    const kept = [...await recordEvents(env, env.customer.customerId, 2), ...await recordEvents(env, other.customer.customerId, 1)];
    // 30 days and a minute after the first events: they are past the retention, the later ones are not.
    env.clock.set(start + 30 * DAY_MS + 60_000);

    // Two nodes over one store. Another test's job may have claimed an interval already (one PostgreSQL
    // schema per test process): the nodes' clock starts two intervals later, still far from the kept events.
    const clock = createTestClock(env.clock.now() + 2 * DEFAULT_AUDIT_PURGE_INTERVAL_MS);
    const retentionDays = env.composition.config.auditRetentionDays;
    assert.equal(retentionDays, 30);
    const nodeA = auditPurgeJob({ db: env.composition.store.db, clock, retentionDays });
    const nodeB = auditPurgeJob({ db: env.composition.store.db, clock, retentionDays });
    const ran = await Promise.all([nodeA.tick(), nodeB.tick()]);
    assert.deepEqual(ran.sort(), [false, true], 'exactly one node runs the interval');

    const left = [
      ...await readAllPages(env.admin, env.customer.customerKey, { limit: 500 }),
      ...await readAllPages(other.admin, other.customer.customerKey, { limit: 500 }),
    ].map((e) => e.eventId).sort();
    assert.deepEqual(left, kept.map((e) => e.eventId).sort());
    assert.ok(old.every((e) => !left.includes(e.eventId)));
  });
});
