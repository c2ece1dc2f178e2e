/**
 * Deletes API tokens expired for more than the configured number of days, every interval, on one
 * node of the cluster: with `claim` (store/cluster-jobs.ts) a tick purges only when this node's
 * claim of the interval's run wins, and ticks come every quarter interval so a run is never a whole
 * interval late. The purge is an idempotent DELETE in small batches anyway, so a run repeated after
 * a crash or by the CLI deletes disjoint rows or nothing, and a failed run is retried next interval.
 */
import type { ApiTokensService } from './service.ts';

export interface PurgeScheduler {
  /** Runs a purge now, then every interval; a second start is a no-op. */
  start(): void;
  /** Stops the timer and waits for a purge in progress. */
  stop(): Promise<void>;
  /** One purge; resolves with the number of tokens deleted (0 when one is already running here). */
  runOnce(): Promise<number>;
}

export interface PurgeSchedulerOptions {
  tokens: Pick<ApiTokensService, 'purgeExpired'>;
  intervalSeconds: number;
  /** Resolves true when this node is to run the purge due now (once per cluster); absent: every tick runs it. */
  claim?(intervalMs: number): Promise<boolean>;
  /** Where a failed run is reported (the server's logger). */
  onError?(error: unknown): void;
  onPurged?(count: number): void;
}

export function createPurgeScheduler(options: PurgeSchedulerOptions): PurgeScheduler {
  const { tokens, intervalSeconds, claim, onError, onPurged } = options;
  const intervalMs = intervalSeconds * 1000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;

  async function runOnce(): Promise<number> {
    if (running) return 0;
    running = tokens.purgeExpired().then((count) => {
      if (count > 0) onPurged?.(count);
      return count;
    }).finally(() => { running = undefined; });
    return running;
  }

  // A claim and the run it wins, awaited by stop() (the store closes after it).
  let ticking: Promise<unknown> | undefined;
  const tick = () => {
    if (!claim) { runOnce().catch((error: unknown) => onError?.(error)); return; }
    if (ticking || running || !timer) return;
    ticking = claim(intervalMs)
      .then((mine) => (mine && timer ? runOnce() : 0))
      .catch((error: unknown) => onError?.(error))
      .finally(() => { ticking = undefined; });
  };

  return {
    start() {
      if (timer) return;
      timer = setInterval(tick, claim ? Math.max(250, Math.floor(intervalMs / 4)) : intervalMs);
      tick();
      // The server's listening sockets keep the process alive, not this timer.
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await ticking;
      await running?.catch(() => {});
    },
    runOnce,
  };
}
