/**
 * The audit event's own CPU cost, in process (issue 27): a transaction that records one event, as
 * every change does, against the same transaction empty; with the webhooks listener's kept
 * endpoints (the default) and without (LATCHKEY_READ_CACHE=false: the lookup queries `webhooks`
 * in every event's transaction, as before). One SQLite file, the variants interleaved in rounds
 * so the shared machine's load falls on each alike.
 *
 *   node --import tsx bench/audit-event-cost.ts [events per batch, default 2000] [rounds, default 6]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SYSTEM } from '../src/audit/context.ts';
import { compose, type Composition } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';

const perBatch = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 6);
const dir = mkdtempSync(join(tmpdir(), 'latchkey-audit-cost-'));
const env = (readCache: boolean) => ({
  LATCHKEY_DATABASE_URL: join(dir, 'latchkey.sqlite'), LATCHKEY_DATA_DIR: dir, LATCHKEY_LOG_LEVEL: 'silent',
  LATCHKEY_READ_CACHE: String(readCache), LATCHKEY_MASTER_KEY: 'a'.repeat(64),
});
const kept = await compose(loadConfig(env(true)));
const queried = await compose(loadConfig(env(false)));
const customer = await kept.services.customers.create({ email: 'audit-cost@example.test' });

/** CPU µs per transaction over one batch. */
async function batch(node: Composition, withEvent: boolean): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < perBatch; i++) {
    await node.store.db.transaction().execute(async (trx) => {
      if (withEvent) await node.services.audit.record(trx, customer.customerId, { action: 'user.updated', target: { type: 'user', id: String(i), name: 'ada' } }, SYSTEM);
    });
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / perBatch;
}

const variants = { empty: (n: Composition) => batch(n, false), kept: (n: Composition) => batch(n, true), queried: (n: Composition) => batch(n, true) };
const results: Record<string, number[]> = { empty: [], kept: [], queried: [] };
await batch(kept, true); await batch(queried, true); // warm up
for (let round = 0; round < rounds; round++) {
  results.empty!.push(await variants.empty(kept));
  results.kept!.push(await variants.kept(kept));
  results.queried!.push(await variants.queried(queried));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of Object.entries(results)) console.log(`${name.padEnd(8)} median ${median(xs).toFixed(0)} µs CPU per transaction (rounds: ${xs.map((x) => x.toFixed(0)).join(', ')})`);
console.log(`event's own cost: kept endpoints ${(median(results.kept!) - median(results.empty!)).toFixed(0)} µs, endpoints queried ${(median(results.queried!) - median(results.empty!)).toFixed(0)} µs`);
await queried.close(); await kept.close();
rmSync(dir, { recursive: true, force: true });
