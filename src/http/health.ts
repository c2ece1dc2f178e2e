import type { FastifyInstance } from 'fastify';

export interface HealthOptions {
  ping: () => Promise<void>;
  /** Why this face cannot serve (the content site without a customer); undefined when it can. */
  notReady?: () => string | undefined;
}

const statusSchema = { type: 'object', properties: { status: { type: 'string' } } } as const;

/**
 * The public faces' GET /healthz (the process answers) and GET /readyz (and its database does, and
 * the face can serve). Load balancers often reach only the public port, so these stay there, but
 * without detail: the reasons are on the management interface's /readyz.
 */
export async function healthRoutes(app: FastifyInstance, opts: HealthOptions): Promise<void> {
  app.get('/healthz', { schema: { hide: true, response: { 200: statusSchema } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    if (opts.notReady?.() !== undefined) return reply.code(503).send({ status: 'unavailable' });
    try {
      await opts.ping();
      return { status: 'ok' };
    } catch (error) {
      request.log.warn({ err: error }, 'database not reachable');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
}
