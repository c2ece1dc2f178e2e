/**
 * A loopback port free at the moment of asking, for a server started as a child process.
 * Taken below Linux's ephemeral range (32768–60999): a port the kernel handed out with listen(0) is
 * one it may hand to any other socket (an outgoing connection of a parallel test) before the child
 * binds it, which made servers fail with EADDRINUSE now and then. Below the range only another
 * explicit bind can take it, and the port is picked at random among 12,000.
 */
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

const FIRST = 20_000;
const LAST = 32_000;

function tryListen(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = randomInt(FIRST, LAST);
    if (await tryListen(port)) return port;
  }
  throw new Error(`no free port found between ${FIRST} and ${LAST}`);
}
