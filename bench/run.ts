/**
 * `npm run bench`: seeds a fresh store (SQLite in a temporary directory, or a fresh PostgreSQL
 * schema), starts the server under test in a child process, runs every scenario with autocannon
 * from this process, prints each figure against its target, a summary table, and writes the same
 * as JSON in the temporary directory. Results are never written into the repository.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { compose, type Composition } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { createStore, type Store } from '../src/store/db.ts';
import { checkOutBaseline, setUpBaseline, type BaselineCheckout } from './baseline.ts';
import { startCeilingHost, type CeilingHost } from './ceiling.ts';
import { startServer, type ServerHandle } from './child.ts';
import { createBench, passes, type BaselineServer, type CheckRow, type Collected, type Target } from './harness.ts';
import { parseOptions, USAGE, type BenchOptions } from './options.ts';
import { formatProfile, summariseProfiles } from './profile.ts';
import { describeMemory, formatSummary, heapFigures, type Report } from './report.ts';
import { scenarios } from './scenarios/index.ts';
import { seedUsers } from './seed.ts';
import { startSmtpSink, type SmtpSinkHandle } from './smtp-sink.ts';

/** Issue 2's memory targets, MiB. */
const RSS_IDLE_MAX = 128;
const RSS_LOAD_MAX = 256;

const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Database { url: string; schema?: string; drop(): Promise<void> }

function openDatabase(options: BenchOptions, dir: string): Database {
  if (options.store === 'sqlite') {
    mkdirSync(dir, { recursive: true });
    const url = join(dir, 'latchkey.sqlite');
    return { url, drop: async () => { if (!options.keep) for (const suffix of ['', '-wal', '-shm']) rmSync(url + suffix, { force: true }); } };
  }
  const schema = `lk_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  return {
    url: options.postgresUrl,
    schema,
    drop: async () => {
      const client = new pg.Client({ connectionString: options.postgresUrl });
      await client.connect();
      try { await client.query(`drop schema if exists ${schema} cascade`); } finally { await client.end(); }
    },
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2), process.env);
  if (options.help) { process.stdout.write(USAGE); return; }
  // A name selects that scenario; a string that names none selects every scenario it prefixes.
  const matches = (name: string, wanted: string) => name === wanted || (!scenarios.some((s) => s.name === wanted) && name.startsWith(wanted));
  const selected = options.only.length === 0 ? scenarios : scenarios.filter((s) => options.only.some((o) => matches(s.name, o)));
  if (selected.length === 0) throw new Error(`--only matches no scenario; there are: ${scenarios.map((s) => s.name).join(', ')}`);
  const oneSided = selected.filter((s) => !s.sideBySide);
  if (options.baseline && oneSided.length > 0) {
    throw new Error(`--baseline measures only ${scenarios.filter((s) => s.sideBySide).map((s) => s.name).join(', ')}; not ${oneSided.map((s) => s.name).join(', ')} (choose with --only)`);
  }

  const startedAt = new Date();
  const loadAverageStart = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-'));
  const database = openDatabase(options, dir);
  let store: Store | undefined;
  let composition: Composition | undefined;
  let server: ServerHandle | undefined;
  let ceilings: CeilingHost | undefined;
  let smtp: SmtpSinkHandle | undefined;
  // --baseline: the other commit's worktree, database and server (bench/baseline.ts).
  const baselineDir = join(dir, 'baseline-data');
  const baselineDatabase = options.baseline ? openDatabase(options, baselineDir) : undefined;
  let checkout: BaselineCheckout | undefined;
  let baselineServer: ServerHandle | undefined;
  let interrupted = false;
  const cleanUp = async () => {
    await server?.stop().catch(() => {});
    await ceilings?.stop().catch(() => {});
    await baselineServer?.stop().catch(() => {});
    await smtp?.stop().catch(() => {});
    await store?.close().catch(() => {});
    await database.drop().catch((error: unknown) => process.stderr.write(`could not drop the bench database: ${(error as Error).message}\n`));
    await baselineDatabase?.drop().catch((error: unknown) => process.stderr.write(`could not drop the baseline database: ${(error as Error).message}\n`));
    await checkout?.remove().catch((error: unknown) => process.stderr.write(`could not remove the baseline worktree ${checkout?.root}: ${(error as Error).message}\n`));
  };
  process.once('SIGINT', () => {
    interrupted = true;
    process.stderr.write('\ninterrupted: cleaning up\n');
    void cleanUp().finally(() => process.exit(130));
  });

  try {
    log(`latchkey bench: ${options.store}${database.schema ? ` (schema ${database.schema})` : ''}, ${options.users.toLocaleString('en-US')} users, `
      + `scenarios ${selected.map((s) => s.name).join(', ')}; working directory ${dir}`);
    const config = loadConfig({ LATCHKEY_DATA_DIR: dir, LATCHKEY_DATABASE_URL: database.url, LATCHKEY_LOG_LEVEL: 'silent' });
    store = await createStore(database.url, { ...(database.schema ? { schema: database.schema } : {}), poolSize: 4 });
    composition = await compose(config, { store });
    const customer = await composition.services.customers.create({ email: 'bench@bench.example', displayName: 'Bench' });
    const seed = await seedUsers(store, customer.customerId, options.users);
    log(`seeded ${seed.users.toLocaleString('en-US')} users in ${seed.seconds.toFixed(1)} s`);

    // The server's mail worker sends to a local sink (magic links, outbox scenarios).
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url, database: database.url, ...(database.schema ? { schema: database.schema } : {}), dataDir: dir, logLevel: options.logLevel, nodeFlags: options.nodeFlags, fromSources: options.profile});
    ceilings = await startCeilingHost({ nodeFlags: options.nodeFlags });
    await sleep(2000);
    const rss: Report['rss'] = { startedMiB: server.rssMiB() };
    log(`server pid ${server.pid}: ${Object.entries(server.ports).map(([face, port]) => `${face} on 127.0.0.1:${port}`).join(', ')}; 2 s after start RSS ${rss.startedMiB?.toFixed(1) ?? 'n/a'} MiB`);
    if (options.idleSeconds > 0) {
      process.stderr.write(`waiting up to ${options.idleSeconds} s for the idle server's memory to settle…\n`);
      rss.idleBeforeMiB = await server.settledRssMiB(options.idleSeconds);
    } else rss.idleBeforeMiB = server.rssMiB();
    rss.heapBefore = heapFigures(await server.memoryUsage());
    log(`idle before load: ${describeMemory(rss.idleBeforeMiB, rss.heapBefore)}`);

    let baseline: BaselineServer | undefined;
    if (options.baseline && baselineDatabase) {
      checkout = await checkOutBaseline(options.baseline, dir);
      log(`baseline ${options.baseline} (${checkout.commit}) checked out in ${checkout.root}`);
      const baselineCustomer = await setUpBaseline(checkout, {
        database: baselineDatabase.url, ...(baselineDatabase.schema ? { schema: baselineDatabase.schema } : {}), dataDir: baselineDir, users: options.users,
      });
      baselineServer = await startServer({
        root: checkout.root, smtpUrl: smtp.url, database: baselineDatabase.url, ...(baselineDatabase.schema ? { schema: baselineDatabase.schema } : {}),
        dataDir: baselineDir, logLevel: options.logLevel, nodeFlags: options.nodeFlags, fromSources: options.profile,
      });
      log(`baseline server pid ${baselineServer.pid}: identity on 127.0.0.1:${baselineServer.ports.identity}`);
      baseline = { ref: options.baseline, server: baselineServer, customer: baselineCustomer };
    }

    const collected: Collected = { measurements: [], checks: [], notes: [], profiles: {} };
    const { bench, setScenario } = createBench({
      options, users: options.users, customer, composition, server, ceilings, smtp, collected, log,
      ...(options.profile ? { profileDir: dir } : {}),
      ...(baseline ? { baseline } : {}),
    });
    for (const scenario of selected) {
      if (interrupted) return;
      setScenario(scenario.name);
      log(`\n== ${scenario.name}: ${baseline ? `side by side with ${baseline.ref}: ` : ''}${scenario.summary}`);
      if (baseline) await bench.sideBySide(scenario);
      else await scenario.run(bench);
      // What the scenario left held: the heap after a full collection, so the whole run's memory can
      // be told apart by scenario (the RSS alone keeps what V8 has not yet given back).
      const heap = heapFigures(await server.memoryUsage({ collect: true }));
      const rssMiB = server.rssMiB();
      const peaks = collected.measurements.filter((m) => m.scenario === scenario.name && m.kind === 'real' && m.peakRssMiB !== undefined).map((m) => m.peakRssMiB!);
      const peakMiB = peaks.length ? Math.max(...peaks) : undefined;
      (rss.afterScenario ??= []).push({ scenario: scenario.name, ...(rssMiB !== undefined ? { rssMiB } : {}), ...(peakMiB !== undefined ? { peakMiB } : {}), heap });
      log(`after ${scenario.name}, a full collection run: ${describeMemory(rssMiB, heap)}${peakMiB !== undefined ? `; peak under its load ${peakMiB.toFixed(1)} MiB` : ''}`);
    }
    await baselineServer?.stop();
    baselineServer = undefined;

    const peaks = collected.measurements.filter((m) => m.kind === 'real' && m.peakRssMiB !== undefined).map((m) => m.peakRssMiB!);
    if (peaks.length) rss.peakUnderLoadMiB = Math.max(...peaks);
    await sleep(3000);
    rss.afterLoadMiB = server.rssMiB();
    if (options.idleSeconds > 0) {
      process.stderr.write(`waiting up to ${options.idleSeconds} s for the idle server's memory to settle…\n`);
      rss.idleAfterMiB = await server.settledRssMiB(options.idleSeconds);
    } else rss.idleAfterMiB = rss.afterLoadMiB;
    rss.heapAfter = heapFigures(await server.memoryUsage());
    if (options.heapSnapshot) {
      const path = join(dir, `server-${server.pid}.heapsnapshot`);
      await server.heapSnapshot(path);
      log(`heap snapshot of the idle server: ${path}`);
    }
    log(`\nafter load: RSS ${rss.afterLoadMiB?.toFixed(1) ?? 'n/a'} MiB 3 s after; idle ${describeMemory(rss.idleAfterMiB, rss.heapAfter)}`);
    const rssCheck = (label: string, value: number | undefined, target: Target) => {
      if (value === undefined) return;
      const row: CheckRow = { scenario: 'server', label, value, unit: 'MiB', target, pass: passes(value, target) };
      collected.checks.push(row);
    };
    const idleNote = options.idleSeconds > 0 ? 'settled' : 'at once';
    rssCheck(`RSS idle before load (${idleNote})`, rss.idleBeforeMiB, { op: '<=', threshold: RSS_IDLE_MAX, source: 'issue 2' });
    rssCheck(`RSS idle after load (${idleNote})`, rss.idleAfterMiB, { op: '<=', threshold: RSS_IDLE_MAX, source: 'issue 2' });
    rssCheck('RSS peak under load (real routes)', rss.peakUnderLoadMiB, { op: '<=', threshold: RSS_LOAD_MAX, source: 'issue 2' });

    await server.stop();
    server = undefined;
    await ceilings.stop();
    ceilings = undefined;

    const report: Report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
      machine: { node: process.version, platform: process.platform, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '', loadAverageStart, loadAverageEnd: loadavg() },
      options: { ...options, postgresUrl: options.store === 'postgres' ? options.postgresUrl.replace(/\/\/[^@/]*@/, '//***@') : undefined },
      seed,
      measurements: collected.measurements,
      checks: collected.checks,
      rss,
      notes: collected.notes,
    };
    const resultsPath = join(dir, 'latest.json');
    writeFileSync(resultsPath, JSON.stringify(report, null, 2) + '\n');

    if (options.profile) {
      for (const [label, files] of Object.entries(collected.profiles)) log(`\n${formatProfile(label, summariseProfiles(files))}\n  files: ${files.join(' ')}`);
    }
    log(`\n${formatSummary(report, collected)}`);
    log(`\nresults: ${resultsPath}`);
    const failed = collected.checks.filter((c) => !c.pass).length + collected.measurements.filter((m) => m.pass === false).length;
    if (failed > 0) log(`${failed} target(s) missed (a benchmark, not a test: the exit code stays 0)`);
  } finally {
    await cleanUp();
    log(options.store === 'sqlite'
      ? (options.keep ? `the database is kept in ${dir}` : '(the SQLite database was removed; --keep keeps it)')
      : `(schema ${database.schema} was dropped)`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${(error as Error).stack ?? error}\n`);
  process.exitCode = 1;
});
