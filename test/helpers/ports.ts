/**
 * A loopback port free at the moment of asking, for a server started as a child process.
 * Taken below Linux's ephemeral range (32768–60999): a port the kernel handed out with listen(0) is
 * one it may hand to any other socket (an outgoing connection of a parallel test) before the child
 * binds it, which made servers fail with EADDRINUSE now and then. Below the range only another
 * explicit bind can take it, and the port is picked at random among 12,000.
 *
 * A port is free only until its child binds it, so a port handed out is also reserved: never handed
 * out twice by this process (a test that picks two deployments' ports before starting either), and
 * held by a lock file that the other test processes of the same run respect. A lock whose process
 * has gone is taken over.
 */
import { randomInt } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const FIRST = 20_000;
const LAST = 32_000;
const LOCKS = join(tmpdir(), 'latchkey-test-ports');
const ours = new Set<number>();

process.on('exit', () => {
  for (const port of ours) rmSync(join(LOCKS, String(port)), { force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the run-wide lock of `port`, or says another live process holds it. */
function reserve(port: number): boolean {
  if (ours.has(port)) return false;
  mkdirSync(LOCKS, { recursive: true });
  const path = join(LOCKS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      ours.add(port);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Empty: its holder is between creating and writing it.
      const holder = Number(readFileSync(path, 'utf8'));
      if (!holder || alive(holder)) return false;
      rmSync(path, { force: true });
    }
  }
  return false;
}

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
    if (reserve(port) && await tryListen(port)) return port;
  }
  throw new Error(`no free port found between ${FIRST} and ${LAST}`);
}
