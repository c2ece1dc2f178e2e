/** Issue 2's users figures: signed users/get, and users/getall (batchSize 500) at the first and last batch. */
import type { Scenario } from '../harness.ts';
import { benchUsername } from '../seed.ts';

const BATCH_SIZE = 500;

export const usersGet: Scenario = {
  name: 'users-get',
  summary: 'signed POST /api/admin/users/get of one user, vs a ceiling serving the same body',
  async run(bench) {
    const username = benchUsername(Math.ceil(bench.users / 2));
    await bench.compare('users/get', bench.admin('/api/admin/users/get', { customerKey: bench.customer.customerKey, username }), {
      op: '>=', threshold: bench.store === 'postgres' ? 0.35 : 0.5, source: 'issue 2',
    });
  },
  // Side by side, the control: a read that writes no event, so its this ÷ baseline shows the run's noise.
  async sideBySide(side) {
    return { label: 'users/get', spec: side.admin('/api/admin/users/get', { customerKey: side.customer.customerKey, username: benchUsername(Math.ceil(side.users / 2)) }) };
  },
};

export const usersGetAll: Scenario = {
  name: 'users-getall',
  summary: `signed POST /api/admin/users/getall batchSize ${BATCH_SIZE}: first batch vs ceiling, and the last batch`,
  async run(bench) {
    const list = (batchNo: number) => bench.admin('/api/admin/users/getall', { customerKey: bench.customer.customerKey, batchSize: BATCH_SIZE, batchNo });
    const lastBatch = Math.max(1, Math.ceil(bench.users / BATCH_SIZE));
    const { real: first, others: [last] } = await bench.compare('users/getall first batch', list(1), { op: '>=', threshold: 0.7, source: 'issue 2' }, [
      { label: `users/getall batch ${lastBatch} (last)`, spec: list(lastBatch) },
    ]);
    // "No slower than 2x the first": time per request, i.e. first req/s over last req/s.
    bench.check('getall last/first (time per request)', first.requestsPerSecond / last.requestsPerSecond, 'x', {
      op: '<=', threshold: 2, source: 'issue 2 (at 1,000,000 users)',
    }, `p50 ${last.p50Ms.toFixed(2)} vs ${first.p50Ms.toFixed(2)} ms`);
  },
  async sideBySide(side) {
    return { label: 'users/getall first batch', spec: side.admin('/api/admin/users/getall', { customerKey: side.customer.customerKey, batchSize: BATCH_SIZE, batchNo: 1 }) };
  },
};

/**
 * Issue 22, item 12: the signed rate the replay guard sustains. users/get with a new triple on every
 * request (a migration script), beside the usual new triple a millisecond: the difference is what an
 * entry per request costs the guard (memory on SQLite, an upserted row on PostgreSQL, a SET in Redis).
 */
export const usersGetDistinct: Scenario = {
  name: 'users-get-distinct',
  summary: 'signed POST /api/admin/users/get, a new triple every request vs every millisecond (replay guard rate)',
  async run(bench) {
    const body = { customerKey: bench.customer.customerKey, username: benchUsername(Math.ceil(bench.users / 2)) };
    const { real } = await bench.measure('users/get, triple per request', bench.adminDistinct('/api/admin/users/get', body), {
      others: [{ label: 'users/get, triple per ms', spec: bench.admin('/api/admin/users/get', body) }],
    });
    bench.note(`${Math.round(real.requestsPerSecond).toLocaleString('en-US')} distinct signed triples/s admitted by the replay guard${real.failed > 0 ? ` (${real.failed} refused: ${JSON.stringify(real.statusCodes)})` : ', none refused'}`);
  },
};

/**
 * Issue 27's write cost: signed users/update that changes the user every time (so it writes its
 * user.updated event in the same transaction) beside signed users/get. Run on a branch without the
 * audit log, it gives the figure the event's cost is measured against (within 10 %).
 */
export const usersUpdate: Scenario = {
  name: 'users-update',
  summary: 'signed POST /api/admin/users/update changing a user each time (one audit event each) vs signed users/get, in interleaved slices',
  async run(bench) {
    const customerKey = bench.customer.customerKey;
    // Spread over many users, as real edits are; the name alternates so each update changes something.
    const spread = Math.min(bench.users, 10_000);
    let next = 0;
    const { real: update, others: [got] } = await bench.measure('users/update', {
      ...bench.admin('/api/admin/users/update', {}),
      dynamicBody: () => {
        const n = next++;
        return { customerKey, username: benchUsername(1 + (n % spread)), firstName: `Bench ${Math.floor(n / spread) % 2}` };
      },
    }, { others: [{ label: 'users/get (for update)', spec: bench.admin('/api/admin/users/get', { customerKey, username: benchUsername(Math.ceil(bench.users / 2)) }) }] });
    bench.note(`users/update ${Math.round(update.requestsPerSecond)} req/s (p50 ${update.p50Ms.toFixed(2)} ms) vs users/get ${Math.round(got.requestsPerSecond)} req/s: ${(update.requestsPerSecond / got.requestsPerSecond).toFixed(2)}x; ${next.toLocaleString('en-US')} updates over ${spread.toLocaleString('en-US')} users`);
  },
  async sideBySide(side) {
    const spread = Math.min(side.users, 10_000);
    let next = 0;
    return {
      label: 'users/update',
      spec: {
        ...side.admin('/api/admin/users/update', {}),
        dynamicBody: () => {
          const n = next++;
          return { customerKey: side.customer.customerKey, username: benchUsername(1 + (n % spread)), firstName: `Bench ${Math.floor(n / spread) % 2}` };
        },
      },
    };
  },
};
