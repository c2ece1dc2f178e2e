/**
 * The ceilings, in a process of their own (forked by bench/ceiling.ts): for each route measured, a
 * bare Fastify (no auth, no database, no hooks, no serialisation) answering the bytes the real route
 * answered when the bench asked it once over HTTP. Nothing on that route can cost less, so the
 * difference is everything Latchkey adds.
 *
 * Not in the server's process: there it shared the server's heap, garbage collections and compiled
 * code (Fastify's and Node's HTTP functions serving two apps of different shapes), so neither side
 * was measured alone; apart, a ceiling is what a bare Fastify on this host does, as a separate
 * server measured from outside would be.
 */
import Fastify, { type FastifyInstance } from 'fastify';

export type CeilingMessage =
  | { type: 'serve'; id: number; method: string; path: string; status: number; contentType: string; body: string }
  | { type: 'close'; id: number }
  | { type: 'stop' };

export type CeilingAnswer =
  | { type: 'ready' }
  | { type: 'serving'; id: number; port: number }
  | { type: 'done'; id: number }
  | { type: 'error'; id: number; message: string };

const send = (answer: CeilingAnswer) => process.send?.(answer);
const ceilings = new Map<number, FastifyInstance>();

async function serve(message: Extract<CeilingMessage, { type: 'serve' }>): Promise<void> {
  // Computed once and sent as they are: the route's own bytes.
  const bytes = Buffer.from(message.body, 'base64');
  const { status, contentType } = message;
  const ceiling = Fastify({ logger: false });
  ceiling.route({
    method: message.method as 'GET',
    url: message.path,
    handler: (_request, reply) => { reply.code(status).type(contentType).send(bytes); },
  });
  await ceiling.listen({ host: '127.0.0.1', port: 0 });
  ceilings.set(message.id, ceiling);
  send({ type: 'serving', id: message.id, port: (ceiling.server.address() as { port: number }).port });
}

process.on('message', (message: CeilingMessage) => {
  const run = async () => {
    if (message.type === 'serve') await serve(message);
    else if (message.type === 'close') {
      await ceilings.get(message.id)?.close();
      ceilings.delete(message.id);
      send({ type: 'done', id: message.id });
    } else if (message.type === 'stop') {
      for (const ceiling of ceilings.values()) await ceiling.close();
      process.exit(0);
    }
  };
  run().catch((error: unknown) => send({ type: 'error', id: 'id' in message ? message.id : -1, message: (error as Error).message ?? String(error) }));
});
// The parent went away (Ctrl-C, crash): do not linger.
process.on('disconnect', () => process.exit(1));
send({ type: 'ready' });
