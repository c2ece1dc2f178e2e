/**
 * The Redis connection shared by the replay guard and the rate limits when LATCHKEY_REDIS_URL is
 * set. Fails fast rather than queue: a command waits at most a second and is not retried, and
 * nothing is queued while disconnected, so a request needing Redis fails (closed) instead of hanging.
 */
import type { Redis } from 'ioredis';

/** ioredis is loaded only by a node configured with Redis (it holds about 8 MiB of memory). */
export async function createRedis(url: string, onError: (error: Error) => void = () => {}): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    commandTimeout: 1000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    // Reconnects forever, at most every 2 s: Redis coming back is picked up without a restart.
    retryStrategy: (times) => Math.min(times * 100, 2000),
    lazyConnect: false,
  });
  // An 'error' event without a listener would crash the process; connection errors also fail the commands.
  redis.on('error', onError);
  return redis;
}
