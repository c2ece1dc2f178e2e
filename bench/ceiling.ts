/**
 * The parent's handle on the ceilings' process (bench/ceiling-server.ts): one per run, started with
 * the server's Node.js flags and allocator settings, bundled as the server is.
 */
import { execFileSync, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readCpuSeconds, startEnvironment } from './child.ts';
import type { CeilingAnswer, CeilingMessage } from './ceiling-server.ts';

/** The real route's answer, as the server under test gave it. */
export interface CapturedAnswer { method: string; path: string; status: number; contentType: string; body: Buffer }

export interface Ceiling {
  port: number;
  status: number;
  /** The real route's response body, byte for byte. */
  body: string;
  close(): Promise<void>;
}

export interface CeilingHost {
  pid: number;
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
  const child = fork(bundle, [], {
    execArgv: options.nodeFlags ?? [],
    env: { ...process.env, ...startEnvironment() },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiting = new Map<number, { resolve: (answer: CeilingAnswer) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ceilings' process exited during start (code ${code})`)));
    child.on('message', (answer: CeilingAnswer) => {
      if (answer.type === 'ready') { resolve(); return; }
      const pending = waiting.get(answer.id);
      if (!pending) return;
      waiting.delete(answer.id);
      if (answer.type === 'error') pending.reject(new Error(`ceiling: ${answer.message}`));
      else pending.resolve(answer);
    });
  });
  child.on('exit', (code) => {
    for (const pending of waiting.values()) pending.reject(new Error(`the ceilings' process exited (code ${code})`));
    waiting.clear();
  });
  const ask = (message: Exclude<CeilingMessage, { type: 'stop' }>) => new Promise<CeilingAnswer>((resolve, reject) => {
    waiting.set(message.id, { resolve, reject });
    child.send(message);
  });
  const pid = child.pid!;

  return {
    pid,
    cpuSeconds: () => readCpuSeconds(pid),
    async serve(answer) {
      const id = nextId++;
      const started = await ask({
        type: 'serve', id, method: answer.method, path: answer.path, status: answer.status, contentType: answer.contentType, body: answer.body.toString('base64'),
      });
      if (started.type !== 'serving') throw new Error(`unexpected answer ${started.type}`);
      return {
        port: started.port,
        status: answer.status,
        body: answer.body.toString(),
        close: async () => { await ask({ type: 'close', id }); },
      };
    },
    async stop() {
      if (child.exitCode === null && child.connected) child.send({ type: 'stop' } satisfies CeilingMessage);
      const timeout = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
