/**
 * What a scenario sees: the seeded data, request builders (signed admin requests), and three verbs —
 * `compare` (ceiling vs real route), `measure` (real routes only) and `check` (a target). Results are
 * collected here and printed by report.ts. A new scenario is a `Scenario` object in scenarios/.
 */
import { join } from 'node:path';
import type { Composition } from '../src/compose/index.ts';
import type { CreatedCustomer } from '../src/identity/customers/service.ts';
import type { CeilingHost } from './ceiling.ts';
import type { ServerHandle } from './child.ts';
import type { DrivenLoad } from './flows.ts';
import type { Face } from './server.ts';
import { adminSigner, distinctAdminSigner, encodeBody, headersOf, runLoad, summarise, type LoadRun, type LoadStats, type RequestSpec } from './load.ts';
import type { BenchOptions } from './options.ts';
import type { SmtpSinkHandle } from './smtp-sink.ts';

/** The content-site faces: HS256 JWTs (as configured by default) and RS256. */
export type SiteFace = Extract<Face, 'site' | 'siteRs256'>;

export interface Scenario {
  /** Used by --only (prefix match) and in the report. */
  name: string;
  summary: string;
  run(bench: Bench): Promise<void>;
  /**
   * With --baseline: the requests measured on each server, made for that side (its customer, its
   * setup through the wire: the admin API, the site's routes), one comparison each, in this order.
   * Scenarios without it are not run side by side.
   */
  sideBySide?(side: Side): Promise<SideBySideRequest | SideBySideRequest[]>;
}

export interface SideBySideRequest { label: string; spec: RequestSpec }

/** One server under test as a side-by-side scenario sees it: this checkout's, or the baseline's. */
export interface Side {
  name: 'this' | 'baseline';
  customer: { customerId: number; customerKey: string; apiKey: string };
  users: number;
  /** A signed admin request to this side's identity face (bench.admin's). */
  admin(path: string, body?: Record<string, unknown>, method?: RequestSpec['method']): RequestSpec;
  /** One signed admin call now, for a scenario's setup (the admin API both commits answer alike); throws unless 200. */
  call(path: string, body: Record<string, unknown>): Promise<unknown>;
  /** A request to this side's content site (bench.site's). */
  site: Bench['site'];
  /** The address of `path` on one of this side's faces, for a setup call through the wire. */
  url(face: Face, path: string): string;
}

/** The baseline server (--baseline) and its bench customer. */
export interface BaselineServer { ref: string; server: ServerHandle; customer: Side['customer'] }

export interface Target {
  /** `>=`: the value must reach the threshold; `<=`: it must not exceed it. */
  op: '>=' | '<=';
  threshold: number;
  /** Where the target comes from, e.g. "issue 2". */
  source?: string;
}

export interface MeasurementRow extends LoadStats {
  scenario: string;
  label: string;
  kind: 'ceiling' | 'real';
  /** Real / ceiling requests per second (real rows of a comparison only). */
  ratio?: number;
  target?: Target;
  pass?: boolean;
  /** Peak server RSS during this measurement, MiB. */
  peakRssMiB?: number;
  /**
   * Requests answered per second of the server process's CPU (all its threads): what one core
   * serves of this route, the load generator's share of the machine left out. A ceiling's row is
   * of the ceilings' process, a baseline's of the baseline server.
   */
  perCore?: number;
  /** Size of the response body (ceiling rows). */
  responseBytes?: number;
}

export interface CheckRow {
  scenario: string;
  label: string;
  value: number;
  unit: string;
  target: Target;
  pass: boolean;
  note?: string;
}

export interface Bench {
  options: BenchOptions;
  store: BenchOptions['store'];
  /** Seeded users: benchUsername(1..users). */
  users: number;
  customer: CreatedCustomer;
  /** Services on the same database as the server under test, for a scenario's own setup. */
  composition: Composition;
  server: ServerHandle;
  /** The local SMTP server the server under test's mail worker sends to (accepts and discards). */
  smtp: SmtpSinkHandle;
  /** A signed admin request (fresh Timestamp and digest per request) on the identity face. */
  admin(path: string, body?: Record<string, unknown>, method?: RequestSpec['method']): RequestSpec;
  /** The same, with a new triple on every request (the replay guard gets an entry per request). */
  adminDistinct(path: string, body?: Record<string, unknown>): RequestSpec;
  /**
   * A request to the content site (port of the server under test's site face), e.g.
   * `bench.site('GET', '/rest/api/2/myself', { headers: { authorization: `Bearer ${token}` } })`;
   * `face: 'siteRs256'` sends it to the site that signs RS256 JWTs instead.
   */
  site(method: RequestSpec['method'], path: string, options?: Pick<RequestSpec, 'body' | 'headers' | 'dynamicHeaders' | 'dynamicBody'> & { face?: SiteFace }): RequestSpec;
  /**
   * The ceiling and the real route (and `others`, real routes measured alongside, e.g. a deeper
   * page) in interleaved slices, so drifting background load hits all alike; records real/ceiling.
   */
  compare(label: string, spec: RequestSpec, target?: Target, others?: { label: string; spec: RequestSpec }[]):
    Promise<{ ceiling: MeasurementRow; real: MeasurementRow; others: MeasurementRow[] }>;
  /**
   * Real routes without a ceiling: `spec`, and `others` measured alongside in interleaved slices;
   * `between(seconds)` runs in slices of its own between them (a figure measured outside HTTP, such
   * as a raw hashing rate), so drifting background load hits it alike. A DrivenLoad (bench/flows.ts)
   * stands for a route where one iteration is several requests (a whole sign-in).
   */
  measure(label: string, spec: RequestSpec | DrivenLoad, alongside?: {
    others?: { label: string; spec: RequestSpec | DrivenLoad }[];
    between?: (seconds: number) => Promise<void>;
  }): Promise<{ real: MeasurementRow; others: MeasurementRow[] }>;
  check(label: string, value: number, unit: string, target: Target, note?: string): CheckRow;
  /**
   * With --baseline: the scenario's request on this server and on the baseline, and a ceiling, in
   * interleaved slices; records each one's ratio to the ceiling and this ÷ baseline (issue 27: >= 0.9).
   */
  sideBySide(scenario: Scenario): Promise<void>;
  /** A line in the report (what a figure means, a caveat). */
  note(text: string): void;
}

export interface Collected {
  measurements: MeasurementRow[];
  checks: CheckRow[];
  notes: string[];
  /** With --profile: the .cpuprofile files of each real measurement, by label. */
  profiles: Record<string, string[]>;
}

export function passes(value: number, target: Target): boolean {
  return target.op === '>=' ? value >= target.threshold : value <= target.threshold;
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

export function describeRow(row: MeasurementRow): string {
  const parts = [
    `${row.label.padEnd(28)} ${row.kind.padEnd(7)}`,
    `${Math.round(row.requestsPerSecond).toLocaleString('en-US').padStart(8)} req/s`,
    `p50 ${fmt(row.p50Ms).padStart(6)} ms`,
    `p99 ${fmt(row.p99Ms).padStart(6)} ms`,
  ];
  if (row.responseBytes !== undefined) parts.push(`body ${row.responseBytes.toLocaleString('en-US')} B`);
  if (row.perCore !== undefined) parts.push(`${Math.round(row.perCore).toLocaleString('en-US').padStart(7)}/s per core`);
  // The ceiling sends precomputed bytes: a real route faster than it means the yardstick is broken.
  if (row.ratio !== undefined) parts.push(`ratio ${fmt(row.ratio)}${row.ratio > 1 ? ' (above 1: the ceiling is broken)' : ''}`);
  if (row.target) parts.push(`target ${row.target.op} ${row.target.threshold}  ${row.pass ? 'PASS' : 'FAIL'}`);
  if (row.failed > 0) parts.push(`(${row.failed} failed: ${JSON.stringify(row.statusCodes)})`);
  return parts.join('  ');
}

export function createBench(deps: {
  options: BenchOptions;
  users: number;
  customer: CreatedCustomer;
  composition: Composition;
  server: ServerHandle;
  /** Where the ceilings run: a process of their own. */
  ceilings: CeilingHost;
  smtp: SmtpSinkHandle;
  collected: Collected;
  /** Set with --profile: where the server's CPU profiles of real measurements go. */
  profileDir?: string;
  baseline?: BaselineServer;
  log: (line: string) => void;
}): { bench: Bench; setScenario(name: string): void } {
  const { options, server, ceilings, collected, log } = deps;
  let scenario = '';
  const sign = adminSigner(deps.customer.customerKey, deps.customer.apiKey);
  const signDistinct = distinctAdminSigner(deps.customer.customerKey, deps.customer.apiKey);
  const port = (spec: RequestSpec) => server.ports[spec.face];
  /** How an entry's load runs for some seconds: autocannon on a route, or a driver loop. */
  const runner = (p: number, spec: RequestSpec) => (seconds: number) => runLoad(p, spec, seconds, options.connections);
  const runnerOf = (spec: RequestSpec | DrivenLoad) =>
    'drive' in spec ? (seconds: number) => spec.drive(seconds, options.connections) : runner(port(spec), spec);

  const load = async (run: (seconds: number) => Promise<LoadRun>, seconds: number, profileLabel: string | undefined, cpuOf: (() => number | undefined) | undefined) => {
    const cpuBefore = cpuOf?.();
    const work = () => run(seconds);
    let measured = work;
    if (profileLabel && deps.profileDir) {
      const files = (collected.profiles[profileLabel] ??= []);
      const path = join(deps.profileDir, `${profileLabel.replace(/[^A-Za-z0-9]+/g, '-')}-${files.length + 1}.cpuprofile`);
      files.push(path);
      measured = () => server.profile(path, work);
    }
    const { result, peakMiB } = await server.peakRssDuring(measured);
    const cpuAfter = cpuBefore === undefined ? undefined : cpuOf?.();
    return { run: result, peakMiB, cpuSeconds: cpuAfter === undefined ? undefined : cpuAfter - cpuBefore! };
  };

  const row = (label: string, kind: MeasurementRow['kind'], runs: LoadRun[], peaks: (number | undefined)[], cpu: (number | undefined)[] = []): MeasurementRow => {
    const known = peaks.filter((p): p is number => p !== undefined);
    const stats = summarise(runs);
    const cpuSeconds = cpu.length === runs.length && cpu.every((c) => c !== undefined) ? cpu.reduce<number>((sum, c) => sum + (c ?? 0), 0) : 0;
    return {
      scenario, label, kind, ...stats,
      ...(known.length ? { peakRssMiB: Math.max(...known) } : {}),
      ...(cpuSeconds > 0 ? { perCore: stats.ok / cpuSeconds } : {}),
    };
  };

  /** `cpu`: the process whose CPU the entry's per-core figure is of, by default the server under test. */
  interface Entry { run: (seconds: number) => Promise<LoadRun>; profile?: string; cpu?: () => number | undefined }
  const cpuOf = (entry: Entry) => entry.cpu ?? server.cpuSeconds;
  /**
   * Warms every entry up, then runs them in short slices, in blocks that alternate forward and
   * backward (ABBA for two): background load that drifts during the run hits every side alike.
   * `between` is one more side, run by the caller (it is not HTTP load).
   */
  const interleave = async (entries: Entry[], between?: (seconds: number) => Promise<void>) => {
    const runs = entries.map(() => [] as LoadRun[]);
    const peaks = entries.map(() => [] as (number | undefined)[]);
    const cpu = entries.map(() => [] as (number | undefined)[]);
    if (options.warmupSeconds > 0) for (const e of entries) await e.run(options.warmupSeconds);
    const blocks = Math.max(2, 2 * Math.round(options.durationSeconds / 4));
    const slice = options.durationSeconds / blocks;
    const sides = entries.length + (between ? 1 : 0);
    for (let b = 0; b < blocks; b++) {
      const order = Array.from({ length: sides }, (_, i) => i);
      if (b % 2 === 1) order.reverse();
      for (const i of order) {
        if (i === entries.length) { await between!(slice); continue; }
        const { run, peakMiB, cpuSeconds } = await load(entries[i].run, slice, entries[i].profile, cpuOf(entries[i]));
        runs[i].push(run);
        peaks[i].push(peakMiB);
        cpu[i].push(cpuSeconds);
      }
    }
    return { runs, peaks, cpu };
  };

  const finish = (r: MeasurementRow) => {
    collected.measurements.push(r);
    log(describeRow(r));
    if (r.failed > 0 && r.ok === 0) throw new Error(`${r.label}: every request failed: ${JSON.stringify(r.statusCodes)}`);
    return r;
  };

  const bench: Bench = {
    options,
    store: options.store,
    users: deps.users,
    customer: deps.customer,
    composition: deps.composition,
    server,
    smtp: deps.smtp,

    admin(path, body, method = 'POST') {
      return {
        face: 'identity',
        method,
        path,
        ...(body !== undefined ? { body } : {}),
        dynamicHeaders: sign,
      };
    },

    adminDistinct(path, body) {
      return { face: 'identity', method: 'POST', path, ...(body !== undefined ? { body } : {}), dynamicHeaders: signDistinct };
    },

    site(method, path, { face = 'site', ...options } = {}) {
      return { face, method, path, ...options };
    },

    async compare(label, spec, target, others = []) {
      const payload = encodeBody(spec);
      const ceiling = await startCeiling(spec);
      try {
        // The ceiling must answer byte for byte what the real route answered.
        const check = await fetch(`http://127.0.0.1:${ceiling.port}${spec.path}`, {
          method: spec.method, headers: headersOf(spec), ...(payload !== undefined ? { body: payload } : {}),
        });
        const echoed = await check.text();
        if (echoed !== ceiling.body) throw new Error(`${label}: the ceiling's body differs from the real route's (${echoed.length} vs ${ceiling.body.length} bytes)`);
        const { runs, peaks, cpu } = await interleave([
          { run: runner(ceiling.port, spec), cpu: ceilings.cpuSeconds },
          { run: runner(port(spec), spec), profile: label },
          ...others.map((o) => ({ run: runner(port(o.spec), o.spec), profile: o.label })),
        ]);
        const c = finish({ ...row(label, 'ceiling', runs[0], [], cpu[0]), responseBytes: Buffer.byteLength(ceiling.body) });
        const r = row(label, 'real', runs[1], peaks[1], cpu[1]);
        r.ratio = c.requestsPerSecond > 0 ? r.requestsPerSecond / c.requestsPerSecond : NaN;
        if (target) { r.target = target; r.pass = passes(r.ratio, target); }
        finish(r);
        return { ceiling: c, real: r, others: others.map((o, k) => finish(row(o.label, 'real', runs[k + 2], peaks[k + 2], cpu[k + 2]))) };
      } finally {
        await ceiling.close();
      }
    },

    async measure(label, spec, { others = [], between } = {}) {
      const measured = [{ label, spec }, ...others];
      const { runs, peaks, cpu } = await interleave(measured.map((m) => ({ run: runnerOf(m.spec), profile: m.label })), between);
      const [real, ...rest] = measured.map((m, i) => finish(row(m.label, 'real', runs[i], peaks[i], cpu[i])));
      return { real, others: rest };
    },

    check(label, value, unit, target, note) {
      const c: CheckRow = { scenario, label, value, unit, target, pass: passes(value, target), ...(note ? { note } : {}) };
      collected.checks.push(c);
      log(`${label.padEnd(36)} ${fmt(value)} ${unit}  target ${target.op} ${target.threshold}  ${c.pass ? 'PASS' : 'FAIL'}${note ? `  (${note})` : ''}`);
      return c;
    },

    note(text) {
      collected.notes.push(`${scenario}: ${text}`);
      log(`  note: ${text}`);
    },

    async sideBySide(chosen) {
      const baseline = deps.baseline;
      if (!baseline || !chosen.sideBySide) throw new Error(`${chosen.name}: no side-by-side measurement (needs --baseline and a scenario that has one)`);
      const list = (requests: SideBySideRequest | SideBySideRequest[]) => (Array.isArray(requests) ? requests : [requests]);
      const mine = list(await chosen.sideBySide(makeSide('this', deps.customer, server)));
      const theirs = list(await chosen.sideBySide(makeSide('baseline', baseline.customer, baseline.server)));
      for (const [i, ours] of mine.entries()) await compareSides(baseline, ours, theirs[i]!);
    },
  };

  /**
   * A ceiling for `spec`: the server under test's answer to it, asked over HTTP as any client would
   * (an `inject()` in the server would make its HTTP code serve a second kind of request object, and
   * the real route measured a quarter slower after it), served from the ceilings' process.
   */
  async function startCeiling(spec: RequestSpec) {
    const payload = encodeBody(spec);
    const response = await fetch(`http://127.0.0.1:${port(spec)}${spec.path}`, {
      method: spec.method, headers: headersOf(spec), ...(payload !== undefined ? { body: payload } : {}),
    });
    const body = Buffer.from(await response.arrayBuffer());
    if (!response.ok) throw new Error(`${spec.method} ${spec.path} answered ${response.status}: ${body.toString().slice(0, 300)}`);
    return ceilings.serve({
      method: spec.method, path: spec.path.split('?')[0]!, status: response.status,
      contentType: response.headers.get('content-type') ?? 'application/octet-stream', body,
    });
  }

  /** One request on this server, on the baseline and on a ceiling, in interleaved slices. */
  async function compareSides(baseline: BaselineServer, mine: SideBySideRequest, theirs: SideBySideRequest): Promise<void> {
    const ceiling = await startCeiling(mine.spec);
    try {
      const { runs, peaks, cpu } = await interleave([
        { run: runner(ceiling.port, mine.spec), cpu: ceilings.cpuSeconds },
        { run: runner(server.ports[mine.spec.face], mine.spec), profile: mine.label },
        { run: runner(baseline.server.ports[theirs.spec.face], theirs.spec), cpu: baseline.server.cpuSeconds },
      ]);
      const c = finish({ ...row(mine.label, 'ceiling', runs[0], [], cpu[0]), responseBytes: Buffer.byteLength(ceiling.body) });
      const ratio = (r: MeasurementRow) => { r.ratio = c.requestsPerSecond > 0 ? r.requestsPerSecond / c.requestsPerSecond : NaN; return r; };
      const ours = finish(ratio(row(mine.label, 'real', runs[1], peaks[1], cpu[1])));
      const base = finish(ratio(row(`${theirs.label} @ ${baseline.ref}`, 'real', runs[2], [], cpu[2])));
      bench.check(`${mine.label} this ÷ ${baseline.ref}`, ours.requestsPerSecond / base.requestsPerSecond, 'x', { op: '>=', threshold: 0.9, source: 'issue 27' },
        `${Math.round(ours.requestsPerSecond)} vs ${Math.round(base.requestsPerSecond)} req/s; to the ceiling ${ours.ratio!.toFixed(2)} vs ${base.ratio!.toFixed(2)}`);
    } finally {
      await ceiling.close();
    }
  }

  function makeSide(name: Side['name'], customer: Side['customer'], on: ServerHandle): Side {
    const signer = adminSigner(customer.customerKey, customer.apiKey);
    return {
      name,
      customer,
      users: deps.users,
      admin: (path, body, method = 'POST') => ({ face: 'identity', method, path, ...(body !== undefined ? { body } : {}), dynamicHeaders: signer }),
      async call(path, body) {
        const response = await fetch(`http://127.0.0.1:${on.ports.identity}${path}`, {
          method: 'POST', headers: { 'content-type': 'application/json', ...signer() }, body: JSON.stringify(body),
        });
        const text = await response.text();
        if (response.status !== 200) throw new Error(`${name} ${path}: ${response.status} ${text.slice(0, 300)}`);
        return JSON.parse(text);
      },
      site: bench.site,
      url: (face, path) => `http://127.0.0.1:${on.ports[face]}${path}`,
    };
  }
  return { bench, setScenario: (name) => { scenario = name; } };
}
