/**
 * Deletes API tokens expired for more than the configured number of days, every interval. Every
 * node may run it: the purge is an idempotent DELETE in small batches, so nodes running it at the
 * same moment delete disjoint rows or nothing, and a failed run is simply retried next interval.
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
  /** Where a failed run is reported (the server's logger). */
  onError?(error: unknown): void;
  onPurged?(count: number): void;
}

export function createPurgeScheduler(options: PurgeSchedulerOptions): PurgeScheduler {
  const { tokens, intervalSeconds, onError, onPurged } = options;
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

  const tick = () => { runOnce().catch((error: unknown) => onError?.(error)); };

  return {
    start() {
      if (timer) return;
      tick();
      timer = setInterval(tick, intervalSeconds * 1000);
      // The server's listening sockets keep the process alive, not this timer.
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
    runOnce,
  };
}
