/** The end-of-run summary table (stdout) and its JSON twin. */
import type { CheckRow, Collected, MeasurementRow } from './harness.ts';

export interface RssFigures {
  /** 2 s after the server started. */
  startedMiB?: number;
  /** Once settled (see --idle). */
  idleBeforeMiB?: number;
  /** 3 s after the last load. */
  afterLoadMiB?: number;
  idleAfterMiB?: number;
  peakUnderLoadMiB?: number;
  /** The server's process.memoryUsage() when idle before and after load, MiB. */
  heapBefore?: HeapFigures;
  heapAfter?: HeapFigures;
  /** After each scenario, once a full collection has run: what that scenario left held. */
  afterScenario?: { scenario: string; rssMiB?: number; peakMiB?: number; heap: HeapFigures }[];
}

export interface HeapFigures { heapUsedMiB: number; heapTotalMiB: number; externalMiB: number }

export function heapFigures(usage: NodeJS.MemoryUsage): HeapFigures {
  const mib = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
  return { heapUsedMiB: mib(usage.heapUsed), heapTotalMiB: mib(usage.heapTotal), externalMiB: mib(usage.external) };
}

export function describeMemory(rssMiB: number | undefined, heap: HeapFigures | undefined): string {
  const rss = rssMiB === undefined ? 'RSS n/a' : `RSS ${rssMiB.toFixed(1)} MiB`;
  return heap ? `${rss} (V8 heap ${heap.heapUsedMiB} used / ${heap.heapTotalMiB} reserved, external ${heap.externalMiB})` : rss;
}

export interface Report {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: { node: string; platform: string; cpus: number; cpuModel: string; loadAverageStart: number[]; loadAverageEnd: number[] };
  options: Record<string, unknown>;
  seed: { users: number; seconds: number };
  measurements: MeasurementRow[];
  checks: CheckRow[];
  rss: RssFigures;
  notes: string[];
}

const num = (n: number | undefined, digits = 2) => (n === undefined || !Number.isFinite(n) ? '' : n.toFixed(digits));
const int = (n: number) => Math.round(n).toLocaleString('en-US');

function table(header: string[], rows: string[][], rightAligned: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((c, i) => (rightAligned.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function formatSummary(report: Report, collected: Collected): string {
  const rows: string[][] = collected.measurements.map((m) => [
    `${m.label} (${m.kind})`,
    int(m.requestsPerSecond),
    m.perCore === undefined ? '' : int(m.perCore),
    num(m.p50Ms),
    num(m.p99Ms),
    num(m.ratio),
    m.target ? `${m.target.op} ${m.target.threshold}` : '',
    m.pass === undefined ? '' : m.pass ? 'PASS' : 'FAIL',
  ]);
  for (const c of collected.checks) rows.push([c.label, '', '', '', '', `${num(c.value)}${c.unit === 'x' ? '' : ` ${c.unit}`}`, `${c.target.op} ${c.target.threshold}`, c.pass ? 'PASS' : 'FAIL']);
  const o = report.options;
  const title = `Summary: ${o.store}, ${int(report.seed.users)} users, ${o.connections} connections, `
    + `${o.durationSeconds} s per measured route, server log level ${o.logLevel}${(o.nodeFlags as string[]).length ? `, node flags ${(o.nodeFlags as string[]).join(' ')}` : ''}`
    + '; '
    + `load average ${report.machine.loadAverageStart.map((x) => x.toFixed(2)).join(' ')} -> ${report.machine.loadAverageEnd.map((x) => x.toFixed(2)).join(' ')} on ${report.machine.cpus} CPUs`;
  return `${title}\n${table(['measurement', 'req/s', 'per core', 'p50 ms', 'p99 ms', 'ratio/value', 'target', 'result'], rows, new Set([1, 2, 3, 4, 5]))}`;
}
