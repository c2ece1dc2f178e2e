/**
 * The parent's handle on the server under test (bench/server.ts in a child process): start it,
 * read its resident memory and CPU from /proc, profile it, stop it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forkIpcChild } from './ipc-child.ts';
import type { ChildMessage, Face, ParentMessage } from './server.ts';

export interface ServerHandle {
  pid: number;
  ports: Record<Face, number>;
  /** The server's own view: V8 heap, external and array buffers (bytes). */
  memoryUsage(options?: { collect?: boolean }): Promise<NodeJS.MemoryUsage>;
  /** Writes a V8 heap snapshot of the server to `path` (for Chrome DevTools' Memory tab). */
  heapSnapshot(path: string): Promise<void>;
  /** Resident set size now, in MiB (undefined where /proc is missing). */
  rssMiB(): number | undefined;
  /**
   * Waits (at most `maxSeconds`) for an idle server's RSS to settle: V8's memory reducer gives heap
   * back some 30 s after the last activity. Returns the RSS when it stopped falling.
   */
  settledRssMiB(maxSeconds: number): Promise<number | undefined>;
  /**
   * CPU time the server process has used so far, user and system, all its threads (argon2 hashing
   * runs on libuv's), in seconds; undefined where /proc is missing.
   */
  cpuSeconds(): number | undefined;
  /** Samples RSS while `work` runs and returns its peak (kernel high-water mark when available). */
  peakRssDuring<T>(work: () => Promise<T>): Promise<{ result: T; peakMiB: number | undefined }>;
  /** CPU-profiles the server while `work` runs; writes a .cpuprofile (Chrome DevTools format) to `path`. */
  profile<T>(path: string, work: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const serverSource = fileURLToPath(new URL('./server.ts', import.meta.url));
// Bundled as `npm start` bundles src/main.ts, so the server runs as it does in production (no tsx loader).
const serverBundle = fileURLToPath(new URL('../dist/bench-server.js', import.meta.url));

/** Linux reports process times in clock ticks of USER_HZ, 100 a second on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

export function readCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from the 3rd (state): utime is the 14th, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

function readStatusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux clear_refs "5"); false when not permitted. */
function resetHighWaterMark(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export async function startServer(options: {
  database: string;
  schema?: string;
  dataDir: string;
  logLevel: string;
  nodeFlags?: string[];
  /**
   * Run bench/server.ts through tsx instead of the bundle: a CPU profile then names each function's
   * source file (in the bundle they all live in one file).
   */
  fromSources?: boolean;
  /** LATCHKEY_SMTP_URL of the server under test; its mail worker runs when given. */
  smtpUrl?: string;
  /** Another checkout whose bench/server.ts to build and run (--baseline); default this one. */
  root?: string;
}): Promise<ServerHandle> {
  const args = ['--database', options.database, '--data-dir', options.dataDir, '--log-level', options.logLevel];
  if (options.schema) args.push('--schema', options.schema);
  if (options.smtpUrl) args.push('--smtp-url', options.smtpUrl);
  const from = options.root ?? root;
  const source = options.root ? join(options.root, 'bench/server.ts') : serverSource;
  const bundle = options.root ? join(options.root, 'dist/bench-server.js') : serverBundle;
  // Built by the checkout's own build script, as that commit's `npm start` would build it.
  if (!options.fromSources) execFileSync(process.execPath, ['scripts/build.mjs', source, bundle], { cwd: from, stdio: 'inherit' });
  const { child, ready } = await forkIpcChild<ParentMessage, ChildMessage, Extract<ChildMessage, { type: 'ready' }>>(
    'the bench server', options.fromSources ? source : bundle, args, [...(options.fromSources ? ['--import', 'tsx'] : []), ...(options.nodeFlags ?? [])],
  );
  const { ports } = ready;
  const { ask } = child;
  let nextId = 1;

  const { pid } = child;
  const rssMiB = () => {
    const kib = readStatusKiB(pid, 'VmRSS');
    return kib === undefined ? undefined : kib / 1024;
  };

  return {
    pid,
    ports,
    rssMiB,
    cpuSeconds: () => readCpuSeconds(pid),
    async settledRssMiB(maxSeconds) {
      const samples: number[] = [];
      const first = rssMiB();
      if (first === undefined) return undefined;
      for (let t = 0; t < maxSeconds; t++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        samples.push(rssMiB() ?? first);
        const recent = samples.slice(-3);
        // Settled: fell by a tenth or more, then held for three seconds.
        if (recent.length === 3 && Math.min(...recent) <= first * 0.9 && Math.max(...recent) - Math.min(...recent) < 1) break;
      }
      return samples.length ? samples[samples.length - 1] : first;
    },
    async peakRssDuring(work) {
      const hwm = resetHighWaterMark(pid);
      let peak = rssMiB() ?? 0;
      const timer = setInterval(() => { peak = Math.max(peak, rssMiB() ?? 0); }, 100);
      try {
        const result = await work();
        peak = Math.max(peak, rssMiB() ?? 0);
        const high = hwm ? readStatusKiB(pid, 'VmHWM') : undefined;
        if (high !== undefined) peak = Math.max(peak, high / 1024);
        return { result, peakMiB: peak > 0 ? peak : undefined };
      } finally {
        clearInterval(timer);
      }
    },
    async memoryUsage(options = {}) {
      const answer = await ask({ type: 'memory', id: nextId++, ...(options.collect ? { collect: true } : {}) });
      if (answer.type !== 'memory') throw new Error(`unexpected answer ${answer.type}`);
      return answer.usage;
    },
    async heapSnapshot(path) {
      await ask({ type: 'heap-snapshot', id: nextId++, path });
    },
    async profile(path, work) {
      await ask({ type: 'profile-start', id: nextId++ });
      try {
        return await work();
      } finally {
        await ask({ type: 'profile-stop', id: nextId++, path });
      }
    },
    stop: child.stop,
  };
}
