/**
 * The PostgreSQL replay guard writes the digests admitted in one event-loop turn with one statement.
 * Many requests at once must get exactly the answers one statement each would give: a new triple is
 * admitted, the same triple twice in one turn is admitted twice (the grace covers same-millisecond
 * calls), a triple first seen more than the grace ago is refused, and two guards (two nodes) racing on
 * one triple agree on its first use.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { createDatabaseReplayGuard } from '../../src/identity/replay-guard.ts';
import { createTestClock } from '../../src/lib/clock.ts';
import { postgresStore, postgresUrl } from '../helpers/stores.ts';

const GRACE_MS = 2000;
const WINDOW_MS = 300_000;
const digest = () => randomBytes(64).toString('hex');

if (postgresUrl) await postgresStore();

describe('replay guard, statements shared by a turn [postgres]', { skip: postgresUrl ? false : 'LATCHKEY_TEST_POSTGRES_URL is not set' }, () => {
  test('concurrent admits: new and doubled triples pass, a triple first seen past the grace is refused, a failure refuses every waiter', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    const guard = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });

    const old = digest();
    assert.equal(await guard.admit(1, old, clock.now()), true);
    clock.advance(GRACE_MS + 1);

    const fresh = Array.from({ length: 20 }, digest);
    const requests = [...fresh, ...fresh.slice(0, 5), old, old];
    const answers = await Promise.all(requests.map((d) => guard.admit(1, d, clock.now())));
    assert.deepEqual(answers, [...Array(25).fill(true), false, false]);

    // Each triple is one row, with the longest expiry asked for.
    const rows = await store.db.selectFrom('admin_replay_guard').select(['digest_prefix', 'expires_at'])
      .where('digest_prefix', 'in', fresh.map((d) => d.slice(0, 32))).execute();
    assert.equal(rows.length, 20);

    // Past the grace, every one of them is a replay, in one turn as in separate ones.
    clock.advance(GRACE_MS + 1);
    assert.deepEqual(await Promise.all(fresh.map((d) => guard.admit(1, d, clock.now()))), Array(20).fill(false));
  });

  test('two nodes admitting one triple in the same instant agree: both within the grace, both refused after it', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    const a = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const b = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    const d = digest();
    assert.deepEqual(await Promise.all([a.admit(1, d, clock.now()), b.admit(1, d, clock.now())]), [true, true]);
    clock.advance(GRACE_MS + 1);
    assert.deepEqual(await Promise.all([a.admit(1, d, clock.now()), b.admit(1, d, clock.now())]), [false, false]);
  });

  test('a database error refuses every request of the turn (fails closed) and the next turn works again', async () => {
    const store = await postgresStore();
    const clock = createTestClock(Date.now());
    // A guard whose database rejects: every statement fails as a dropped connection would.
    const failing = createDatabaseReplayGuard({
      db: { insertInto: () => { throw new Error('Connection terminated unexpectedly'); } } as unknown as typeof store.db,
      clock, graceMs: GRACE_MS, windowMs: WINDOW_MS,
    });
    const results = await Promise.allSettled([failing.admit(1, digest(), clock.now()), failing.admit(1, digest(), clock.now())]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    const working = createDatabaseReplayGuard({ db: store.db, clock, graceMs: GRACE_MS, windowMs: WINDOW_MS });
    assert.equal(await working.admit(1, digest(), clock.now()), true);
  });
});
