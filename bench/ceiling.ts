/**
 * The parent's handle on the ceilings' process (bench/ceiling-server.ts): one per run, started with
 * the server's Node.js flags and allocator settings, bundled as the server is.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readCpuSeconds } from './child.ts';
import { forkIpcChild } from './ipc-child.ts';
import type { CeilingAnswer, CeilingMessage } from './ceiling-server.ts';

/** The real route's answer, as the server under test gave it. */
export interface CapturedAnswer { method: string; path: string; status: number; contentType: string; body: Buffer }

export interface Ceiling {
  port: number;
  /** The real route's response body, byte for byte. */
  body: string;
  close(): Promise<void>;
}

export interface CeilingHost {
  /** A bare Fastify answering `answer`'s bytes on `answer.path`. */
  serve(answer: CapturedAnswer): Promise<Ceiling>;
  /** CPU time the ceilings' process has used so far, in seconds (undefined where /proc is missing). */
  cpuSeconds(): number | undefined;
  stop(): Promise<void>;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const source = fileURLToPath(new URL('./ceiling-server.ts', import.meta.url));
const bundle = fileURLToPath(new URL('../dist/bench-ceiling.js', import.meta.url));

export async function startCeilingHost(options: { nodeFlags?: string[] } = {}): Promise<CeilingHost> {
  execFileSync(process.execPath, ['scripts/build.mjs', source, bundle], { cwd: root, stdio: 'inherit' });
  const { child } = await forkIpcChild<CeilingMessage, CeilingAnswer>('the ceilings\' process', bundle, [], options.nodeFlags ?? []);
  const { pid } = child;
  let nextId = 1;

  return {
    cpuSeconds: () => readCpuSeconds(pid),
    async serve(answer) {
      const id = nextId++;
      const started = await child.ask({
        type: 'serve', id, method: answer.method, path: answer.path, status: answer.status, contentType: answer.contentType, body: answer.body.toString('base64'),
      });
      if (started.type !== 'serving') throw new Error(`unexpected answer ${started.type}`);
      return {
        port: started.port,
        body: answer.body.toString(),
        close: async () => { await child.ask({ type: 'close', id }); },
      };
    },
    stop: child.stop,
  };
}
