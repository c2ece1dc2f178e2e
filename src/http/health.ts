import type { FastifyInstance } from 'fastify';

/** GET /healthz: the process answers. GET /readyz: and its database does too. */
export async function healthRoutes(app: FastifyInstance, opts: { ping: () => Promise<void> }): Promise<void> {
  const schema = { hide: true, response: { 200: { type: 'object', properties: { status: { type: 'string' } } } } };
  app.get('/healthz', { schema }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await opts.ping();
      return { status: 'ok' };
    } catch (error) {
      request.log.warn({ err: error }, 'database not reachable');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
}
