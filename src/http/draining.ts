/**
 * A face's graceful close: close() stops accepting, waits for the requests in flight, then resolves
 * (main.ts closes the database only after it). Nothing else may hold it up:
 *
 * - Node reaps at close() only the keep-alive connections idle at that instant. One that answers an
 *   in-flight request afterwards would stay open for keepAliveTimeout (72 s), so while closing every
 *   answer says Connection: close and the idle ones are reaped again after it (app.ts's hooks, which
 *   read `closing`).
 * - A connection on which the client has sent nothing yet (a browser's preconnect, a balancer's
 *   spare) is not idle to Node, and no timeout of Node's applies to it before its first byte: close()
 *   would wait for as long as the client keeps it open, up to the shutdown deadline. Those are closed
 *   at once, as there is nothing on them to answer.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface Draining {
  /** True from the start of close(). */
  readonly closing: boolean;
}

export function installDraining(app: FastifyInstance): Draining {
  const state = { closing: false };
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', (done) => {
    state.closing = true;
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
    done();
  });
  return state;
}
