/**
 * `npm run bench:cluster`: logins per second (the site's token endpoint, one argon2id verify each)
 * with 1, 2 and 3 server processes (`node dist/main.js`) on one fresh PostgreSQL database, load
 * spread evenly over the nodes' site ports by one autocannon run per node. A figure, not a test: on
 * a machine with fewer cores than nodes the figure shows the cores, not the service.
 *
 *   npm run bench:cluster -- [--seconds 8] [--warmup 2] [--connections 8] [--nodes 1,2,3]
 * PostgreSQL: LATCHKEY_BENCH_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test (a
 * database lk_bench_cluster_* is created in it and dropped at the end).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SYSTEM } from '../src/audit/context.ts';
import { compose } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { runLoad, type LoadRun } from './load.ts';

const USER = 'bench-login';
const PASSWORD = 'violet-otter-harbour-42';
const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Node { child: ChildProcess; sitePort: number }

async function startNodes(count: number, env: Record<string, string>, dir: string): Promise<Node[]> {
  const siteUrl = `http://127.0.0.1:${await freePort()}`;
  const nodes: Node[] = [];
  for (let i = 0; i < count; i++) {
    const sitePort = await freePort();
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        PATH: process.env.PATH, ...env,
        LATCHKEY_HOST: '127.0.0.1',
        LATCHKEY_IDENTITY_PORT: String(await freePort()),
        LATCHKEY_SITE_PORT: String(sitePort),
        LATCHKEY_MANAGEMENT_PORT: '0',
        // One issuer for every node, as behind a load balancer.
        LATCHKEY_SITE_URL: siteUrl,
        LATCHKEY_DATA_DIR: join(dir, `node${i}`),
      },
    });
    nodes.push({ child, sitePort });
  }
  const deadline = Date.now() + 30_000;
  for (const node of nodes) {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${node.sitePort}/healthz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() > deadline || node.child.exitCode !== null) throw new Error('a node did not start');
      await sleep(100);
    }
  }
  return nodes;
}

async function stopNodes(nodes: Node[]): Promise<void> {
  await Promise.all(nodes.map((node) => new Promise<void>((resolve) => {
    if (node.child.exitCode !== null) { resolve(); return; }
    node.child.once('exit', () => resolve());
    node.child.kill('SIGTERM');
  })));
}

const median = (values: Float64Array): number => {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '8' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '8' },
      nodes: { type: 'string', default: '1,2,3' },
    },
  });
  const seconds = Number(values.seconds);
  const warmup = Number(values.warmup);
  const connections = Number(values.connections);
  const counts = values.nodes!.split(',').map(Number);
  if (![seconds, warmup, connections, ...counts].every((n) => Number.isInteger(n) && n >= 0) || counts.some((n) => n < 1)) {
    throw new Error('--seconds, --warmup, --connections and --nodes take whole numbers (nodes at least 1)');
  }

  const postgresUrl = process.env.LATCHKEY_BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';
  const database = `lk_bench_cluster_${process.pid}_${randomBytes(3).toString('hex')}`;
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-cluster-'));
  const masterKey = randomBytes(32).toString('hex');
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create database ${database}`);
  let nodes: Node[] = [];
  try {
    const setup = await compose(loadConfig({ LATCHKEY_DATABASE_URL: databaseUrl, LATCHKEY_DATA_DIR: join(dir, 'setup'), LATCHKEY_MASTER_KEY: masterKey, LATCHKEY_LOG_LEVEL: 'silent' }));
    let customerKey: string;
    try {
      const customer = await setup.services.customers.create({ email: 'bench@example.test' });
      customerKey = customer.customerKey;
      await setup.services.users.create(customer.customerId, { username: USER, email: `${USER}@example.test`, firstName: 'Bench', lastName: 'Login', password: PASSWORD, customAttributes: {} }, SYSTEM);
    } finally {
      await setup.close();
    }
    const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: root, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('the build failed');

    const env = {
      LATCHKEY_DATABASE_URL: databaseUrl,
      LATCHKEY_MASTER_KEY: masterKey,
      LATCHKEY_SITE_CUSTOMER_KEY: customerKey,
      LATCHKEY_LOG_LEVEL: 'warn',
    };
    log(`latchkey cluster bench: logins/s on 1 PostgreSQL database, ${connections} connections in all, ${seconds} s per figure, ${cpus().length} CPUs, load average ${loadavg().map((n) => n.toFixed(1)).join(' ')}`);
    const rows: { nodes: number; rate: number; p50: number; failed: number }[] = [];
    for (const count of counts) {
      nodes = await startNodes(count, env, dir);
      const spec = {
        face: 'site' as const, method: 'POST' as const, path: '/cms-json/api/v1/token',
        headers: { 'content-type': 'application/json' }, body: { username: USER, password: PASSWORD },
      };
      const perNode = Math.max(1, Math.round(connections / count));
      const load = (s: number) => Promise.all(nodes.map((node) => runLoad(node.sitePort, spec, s, perNode)));
      if (warmup > 0) await load(warmup);
      const runs: LoadRun[] = await load(seconds);
      const ok = runs.reduce((sum, run) => sum + run.ok, 0);
      const failed = runs.reduce((sum, run) => sum + run.failed, 0);
      const latencies = Float64Array.from(runs.flatMap((run) => Array.from(run.latenciesMs)));
      rows.push({ nodes: count, rate: ok / seconds, p50: median(latencies), failed });
      log(`${count} node(s): ${(ok / seconds).toFixed(1)} logins/s, p50 ${median(latencies).toFixed(1)} ms, ${failed} failed`);
      await stopNodes(nodes);
      nodes = [];
    }
    log(`\nnodes  logins/s  p50 ms  failed   (load average after: ${loadavg().map((n) => n.toFixed(1)).join(' ')})`);
    for (const row of rows) log(`${String(row.nodes).padStart(5)}  ${row.rate.toFixed(1).padStart(8)}  ${row.p50.toFixed(1).padStart(6)}  ${String(row.failed).padStart(6)}`);
  } finally {
    await stopNodes(nodes);
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:cluster: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
