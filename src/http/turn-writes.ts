/**
 * Responses leave at the end of the event-loop turn that produced them, all together (what
 * uWebSockets calls corking). Node writes each response to its socket the moment it ends; every
 * such write to a client that sleeps waiting for it (a reverse proxy or a load balancer on the
 * same host, a busy client) must wake that client, and a wake-up costs the writer far more than
 * the bytes: on a 2-vCPU VM a third of a small request's server time. Written together, the first
 * write wakes the reader and the others find it awake.
 *
 * The cost is latency bounded by the rest of the turn (the other requests that arrived with it),
 * microseconds. Ordering, back-pressure and errors are the stream's own: the socket's write stays
 * in flight until it is really made, so later writes queue behind it as they would behind a slow
 * kernel, and a socket destroyed meanwhile gets the error it would have got.
 *
 * Reaping connections (closeIdleConnections, closeAllConnections, as draining does) first makes
 * the writes still due: Node counts a connection idle once its answer has ended, and destroying
 * it before that answer leaves would lose it.
 *
 * Large writes go at once: copying them costs far more than the wake-up, and holding every large
 * body of a turn until its end raised peak memory by some 50 MiB under 360 KB getall pages.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

type WriteCallback = (error?: Error | null) => void;
type Chunks = Array<{ chunk: unknown; encoding: BufferEncoding }>;

/** Writes of at least this many bytes (characters, for strings) are made at once. */
const DEFERRED_WRITE_MAX = 64 * 1024;

const sizeOf = (chunk: unknown): number => (typeof chunk === 'string' || Buffer.isBuffer(chunk) ? chunk.length : 0);

/** Defers the writes of every connection `server` accepts to the end of the current turn. */
export function writeResponsesPerTurn(server: Server): void {
  let due: (() => void)[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const writes = due;
    due = [];
    for (const write of writes) write();
  };
  const defer = (write: () => void) => {
    due.push(write);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  for (const reap of ['closeIdleConnections', 'closeAllConnections'] as const) {
    const close = server[reap];
    server[reap] = function (this: Server) {
      flush();
      close.call(this);
    };
  }

  server.on('connection', (socket: Socket) => {
    const write = socket._write;
    const writev = socket._writev;
    socket._write = (chunk: unknown, encoding: BufferEncoding, callback: WriteCallback) => {
      if (sizeOf(chunk) >= DEFERRED_WRITE_MAX) write.call(socket, chunk, encoding, callback);
      else defer(() => write.call(socket, chunk, encoding, callback));
    };
    if (writev) {
      socket._writev = (chunks: Chunks, callback: WriteCallback) => {
        let size = 0;
        for (const { chunk } of chunks) size += sizeOf(chunk);
        if (size >= DEFERRED_WRITE_MAX) writev.call(socket, chunks, callback);
        else defer(() => writev.call(socket, chunks, callback));
      };
    }
  });
}
