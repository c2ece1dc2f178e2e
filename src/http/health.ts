import type { FastifyInstance } from 'fastify';

export interface HealthOptions {
  /** Rejects when a store the face needs for every request cannot be reached. */
  ping: () => Promise<void>;
  /** Why this face cannot serve (the content site without a customer); undefined when it can. */
  notReady?: () => string | undefined;
}

const statusSchema = { type: 'object', properties: { status: { type: 'string' } } } as const;

/**
 * The public faces' GET /healthz (the process answers) and GET /readyz (and the stores it needs do:
 * the database, and for the identity face Redis when configured; and the face can serve). Load
 * balancers often reach only the public port, so these stay there, but without detail: the reasons
 * are on the management interface's /readyz.
 */
export async function healthRoutes(app: FastifyInstance, opts: HealthOptions): Promise<void> {
  app.get('/healthz', { schema: { hide: true, response: { 200: statusSchema } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    if (opts.notReady?.() !== undefined) return reply.code(503).send({ status: 'unavailable' });
    try {
      await opts.ping();
      return { status: 'ok' };
    } catch (error) {
      // A probe every few seconds during an outage: one short line each, without a stack.
      request.log.warn({ reason: (error as Error).message }, 'not ready: a store is not reachable');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
}
