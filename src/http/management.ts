/**
 * The management interface (as Keycloak's on port 9000): GET /metrics for both faces, GET /healthz,
 * and GET /readyz with the reason of every check that fails. It listens on its own port, on loopback
 * by default (LATCHKEY_MANAGEMENT_HOST/PORT), so metrics and readiness detail are not public.
 */
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from './app.ts';
import { METRICS_CONTENT_TYPE, type MetricsRegistry } from './metrics.ts';

export interface ManagementOptions {
  logLevel: string;
  logStream?: { write(line: string): void };
  metrics: MetricsRegistry;
  ping: () => Promise<void>;
  /** Redis's PING when LATCHKEY_REDIS_URL is set (signed admin requests and throttles need it). */
  pingRedis?: () => Promise<unknown>;
  /** Why the content site cannot serve, or undefined when it can. */
  siteNotReady?: () => string | undefined;
}

export async function buildManagementApp(opts: ManagementOptions): Promise<FastifyInstance> {
  const app = createHttpApp({ logLevel: opts.logLevel, logStream: opts.logStream });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ status: 'not_found' }));

  app.get('/metrics', async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(opts.metrics.render()));
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    const checks: Record<string, string> = {};
    // A probe every few seconds during an outage: one short line each, without a stack.
    const check = async (name: string, ping: () => Promise<unknown>) => {
      try {
        await ping();
        checks[name] = 'ok';
      } catch (error) {
        request.log.warn({ reason: (error as Error).message }, `${name} not reachable`);
        checks[name] = 'unreachable';
      }
    };
    await check('database', opts.ping);
    if (opts.pingRedis) await check('redis', opts.pingRedis);
    checks.site = opts.siteNotReady?.() ?? 'ok';
    const ready = Object.values(checks).every((value) => value === 'ok');
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
  });
  return app;
}
