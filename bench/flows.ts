/**
 * Load autocannon cannot make: an iteration of several requests that depend on each other (a whole
 * sign-in, a ceremony's options then its answer), run by N workers in a loop for a fixed time and
 * recorded as a LoadRun, so the harness interleaves, merges and reports it like any route.
 */
import type { LoadRun } from './load.ts';

/** A failed iteration, counted under `reason` (runLoad's status codes, for a flow). */
export class FlowFailed extends Error {
  constructor(readonly reason: string, detail = '') {
    super(detail ? `${reason}: ${detail}` : reason);
  }
}

/** A load measured by a driver loop instead of autocannon (bench.measure takes either). */
export interface DrivenLoad {
  /** Runs the loop for `seconds` with `concurrency` workers. */
  drive(seconds: number, concurrency: number): Promise<LoadRun>;
  /**
   * The CPU the loop's own process spent per second of driving so far (1 = one core): the driver
   * shares the machine's cores with the server under test, as autocannon does, but does more per request.
   */
  clientCores(): number;
}

/**
 * `iteration(worker)` again and again in each of `concurrency` workers until `seconds` have passed.
 * Only iterations that end within the window count (ok, failed, latency), over the window: those
 * still running at its end are waited for, so their work never spills into the next slice, but are
 * not counted (as autocannon drops what is in flight when its timer fires).
 */
export async function runFlows(concurrency: number, seconds: number, iteration: (worker: number) => Promise<void>): Promise<LoadRun> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
    while (performance.now() < deadline) {
      const started = performance.now();
      try {
        await iteration(worker);
        const ended = performance.now();
        if (ended <= deadline) { ok++; latencies.push(ended - started); }
      } catch (error) {
        if (performance.now() > deadline) continue;
        failed++;
        const reason = error instanceof FlowFailed ? error.reason : `error: ${String((error as Error).message ?? error).slice(0, 80)}`;
        statusCodes[reason] = (statusCodes[reason] ?? 0) + 1;
      }
    }
  }));
  return { seconds, ok, failed, statusCodes, latenciesMs: Float64Array.from(latencies) };
}

/** A DrivenLoad of `iteration` (see runFlows). */
export function drivenLoad(iteration: (worker: number) => Promise<void>): DrivenLoad {
  let cpuMicros = 0;
  let wallMs = 0;
  return {
    async drive(seconds, concurrency) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      try {
        return await runFlows(concurrency, seconds, iteration);
      } finally {
        const used = process.cpuUsage(cpu);
        cpuMicros += used.user + used.system;
        wallMs += performance.now() - started;
      }
    },
    clientCores: () => (wallMs > 0 ? cpuMicros / 1000 / wallMs : NaN),
  };
}
