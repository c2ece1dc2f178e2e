/**
 * Periodic jobs that must run once per cluster, not once per node: every node ticks, and the node
 * whose claim moves the job's next_run_at runs it. One upsert per tick on either database (no
 * advisory lock, so SQLite files shared by several processes behave the same). A node that dies
 * mid-run loses that run; the next interval's claim runs it again, so jobs must be idempotent.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import type { Database } from './schema.ts';

/** Names this process in scheduler_runs.last_node (which node ran a job last). */
export const NODE_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/**
 * Claims the run of `name` due now: true for exactly one of the nodes asking within one interval.
 * The claim sets the next run an interval ahead whether or not the job then succeeds.
 */
export async function claimRun(db: Kysely<Database>, name: string, intervalMs: number, now: number, node = NODE_ID): Promise<boolean> {
  const row = await db.insertInto('scheduler_runs')
    .values({ name, next_run_at: now + intervalMs, last_run_at: now, last_node: node, runs: 1 })
    .onConflict((oc) => oc.column('name')
      .doUpdateSet((eb) => ({
        next_run_at: eb.ref('excluded.next_run_at'),
        last_run_at: eb.ref('excluded.last_run_at'),
        last_node: eb.ref('excluded.last_node'),
        runs: eb('scheduler_runs.runs', '+', 1),
      }))
      .where('scheduler_runs.next_run_at', '<=', now))
    .returning('runs')
    .executeTakeFirst();
  return row !== undefined;
}

export interface ClusterJob {
  /** Ticks now, then every quarter interval; a second start is a no-op. */
  start(): void;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
  /** One tick: claims, and runs the job when the claim is this node's. Resolves whether it ran. */
  tick(): Promise<boolean>;
}

export function clusterJob(opts: {
  db: Kysely<Database>;
  clock: Clock;
  name: string;
  intervalMs: number;
  run(): Promise<unknown>;
  onError?(error: unknown): void;
}): ClusterJob {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<boolean> | undefined;
  const tick = (): Promise<boolean> => {
    if (running) return Promise.resolve(false);
    running = claimRun(opts.db, opts.name, opts.intervalMs, opts.clock.now())
      .then(async (claimed) => { if (claimed) await opts.run(); return claimed; })
      .finally(() => { running = undefined; });
    return running;
  };
  const safeTick = () => { tick().catch((error: unknown) => opts.onError?.(error)); };
  return {
    start() {
      if (timer) return;
      safeTick();
      // Ticking every interval would race each node's own last claim (a timer a few ms early skips a
      // whole interval); a quarter of it runs the job every 1 to 1.25 intervals. The server's sockets
      // keep the process alive, not this timer.
      timer = setInterval(safeTick, Math.max(250, Math.floor(opts.intervalMs / 4))).unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
    tick,
  };
}
