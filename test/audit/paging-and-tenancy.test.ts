/**
 * The cursor is stable while events arrive: 1,000 events written while another client pages through
 * the log; every event that existed at the start is read exactly once. And tenancy: one customer's
 * events are never listed to another, and another customer's cursor reveals nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { getAll, readAllPages, recordEvents } from './helpers.ts';

describeEachStore('audit log paging and tenancy', (kind) => {
  test('paging while 1,000 events are written: none of those present at the start repeated or missing', async (t) => {
    const env = await build(t, kind);
    const customerId = env.customer.customerId;
    const existing = await recordEvents(env, customerId, 400, 'group.updated', (i) => ({ type: 'group', id: `g${i}`, name: `G${i}` }));

    let written = 0;
    const writer = (async () => {
      // Several writers at once, as a busy server has.
      await Promise.all(Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 250; i++) {
          await recordEvents(env, customerId, 1, 'user.updated');
          written++;
        }
      }));
    })();
    // Each page waits for more writes to land, so new events arrive between every two pages.
    const read = await readAllPages(env.admin, env.customer.customerKey, { limit: 20 }, async () => {
      const target = Math.min(1000, written + 40);
      while (written < target) await new Promise((resolve) => setImmediate(resolve));
    });
    await writer;
    assert.equal(written, 1000);

    const seen = read.map((e) => e.eventId);
    assert.equal(new Set(seen).size, seen.length, 'an event was listed twice');
    const missing = existing.filter((e) => !seen.includes(e.eventId));
    assert.deepEqual(missing, [], 'events present at the start were skipped');
    assert.ok(read.some((e) => e.action === 'user.updated'), 'the first page saw some of the writes (else the test proves nothing)');
    const all = await readAllPages(env.admin, env.customer.customerKey, { limit: 500 });
    assert.equal(all.length, 1400);
  });

  test('one customer\'s events are never listed to another; another\'s cursor reveals nothing', async (t) => {
    const env = await build(t, kind);
    const other = await env.newCustomer();
    const mine = await recordEvents(env, env.customer.customerId, 5, 'user.created');
    const theirs = await recordEvents(env, other.customer.customerId, 5, 'user.created');

    const forOther = await readAllPages(other.admin, other.customer.customerKey, { limit: 2 });
    assert.deepEqual(forOther.map((e) => e.eventId).sort(), theirs.map((e) => e.eventId).sort());
    for (const filter of [{ action: 'user.' }, { targetId: '0' }, { from: 0 }]) {
      const listed = await readAllPages(other.admin, other.customer.customerKey, { limit: 500, ...filter });
      assert.ok(listed.every((e) => theirs.some((t) => t.eventId === e.eventId)), JSON.stringify(filter));
    }

    // My cursor, used by the other customer: only its own events (those below that point), never mine.
    const myPage = await getAll(env.admin, env.customer.customerKey, { limit: 1 });
    assert.notEqual(myPage.nextCursor, '');
    const withMyCursor = await getAll(other.admin, other.customer.customerKey, { limit: 500, cursor: myPage.nextCursor });
    assert.ok(withMyCursor.events.every((e) => !mine.some((m) => m.eventId === e.eventId)));

    // A body naming the other customer with my signature is refused (the admin API's rule) and lists nothing.
    const crossed = await env.admin.post('/admin/audit/getall', { customerKey: Number(other.customer.customerKey), limit: 10 });
    assert.equal(crossed.statusCode, 401, crossed.body);
    assert.doesNotMatch(crossed.body, /eventId/);
  });
});
