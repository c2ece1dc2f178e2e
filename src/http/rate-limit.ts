/**
 * Per-address request budgets by route family, counted by @fastify/rate-limit (in Redis when
 * LATCHKEY_REDIS_URL is set, so every node shares one budget; otherwise in each node's memory, so N
 * nodes allow N budgets). Answers carry the IETF draft's structured headers (RateLimit-Policy:
 * "family";q=max;w=window and RateLimit: "family";r=remaining;t=reset), which the plugin's
 * enableDraftSpec does not write (it writes the older RateLimit-Limit/-Remaining/-Reset trio). A
 * request over budget throws RateLimited, which the face's error handler renders in its own body
 * with Retry-After. The failed-login throttles and lockouts are separate: in the database, exact.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { RateLimit } from '../config.ts';
import { RateLimited } from '../lib/errors.ts';

export interface RateLimitFamily {
  /** Names the family in the headers and the counters' keys. */
  name: string;
  limit: RateLimit;
  /** Whether a request path (without the query) belongs to the family; the first family that matches counts it. */
  matches(path: string): boolean;
}

/** A RateLimited that the route sets with their own error handlers (landing, /oauth/token) see as a 429. */
export class TooManyRequests extends RateLimited {
  readonly statusCode = 429;
}

/** Registers the plugin and the hook on `app`; call it before the routes are added. */
export async function installRateLimits(app: FastifyInstance, opts: { families: RateLimitFamily[]; redis?: Redis }): Promise<void> {
  const families = opts.families.filter((f) => f.limit.max > 0);
  if (families.length === 0) return;
  await app.register(rateLimit, {
    global: false,
    // A store that cannot be reached lets requests through: budgets are a brake on floods, the
    // exact throttles that guard credentials are in the database.
    skipOnError: true,
    ...(opts.redis ? { redis: opts.redis, nameSpace: 'latchkey:rate:' } : {}),
  });
  const limiters = families.map((family) => ({
    family,
    policy: `"${family.name}";q=${family.limit.max};w=${family.limit.windowSeconds}`,
    check: app.createRateLimit({
      max: family.limit.max,
      timeWindow: family.limit.windowSeconds * 1000,
      keyGenerator: (request: FastifyRequest) => `${family.name}:${request.ip}`,
    }),
  }));
  // Callback style: most requests match no family, and an async hook costs a promise on each one.
  app.addHook('onRequest', (request, reply, done) => {
    const url = request.raw.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const limiter = limiters.find((l) => l.family.matches(path));
    if (!limiter) return done();
    limiter.check(request).then((result) => {
      if (result.isAllowed) return done();
      const reset = Math.max(0, result.ttlInSeconds ?? 0);
      reply.header('ratelimit-policy', limiter.policy);
      reply.header('ratelimit', `"${limiter.family.name}";r=${result.remaining ?? 0};t=${reset}`);
      if (!result.isExceeded) return done();
      const seconds = Math.max(1, reset);
      // Here too for the route sets that render their own errors (the landing's pages, /oauth/token).
      reply.header('retry-after', String(seconds));
      done(new TooManyRequests(seconds, `Too many requests: retry after ${seconds} seconds.`));
    }, done);
  });
}
