/**
 * A bench process of its own (the server under test, the ceilings), spoken to over the IPC channel:
 * it sends one `ready` message, then answers each request by its `id` (`error` rejects), and exits
 * on `stop`. Its logs go where a deployment would send them; the bench only needs them written.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * The environment assignments of package.json's start script (`… && A=1 B=2 exec node dist/main.js`):
 * the allocator settings the server runs with, applied to every process the bench measures.
 */
export function startEnvironment(): Record<string, string> {
  const start: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start;
  const command = start.split('&&').at(-1)!;
  return Object.fromEntries([...command.matchAll(/(?:^|\s)([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
}

type Answer = { type: string; id?: number; message?: string };

export interface IpcChild<Request, Reply> {
  pid: number;
  ask(message: Request & { id: number }): Promise<Reply>;
  /** Asks it to stop; killed if it has not exited 15 s later. */
  stop(): Promise<void>;
}

/** Forks `script` with the server's allocator settings (package.json's start script); resolves once it is ready. */
export async function forkIpcChild<Request, Reply extends Answer, Ready extends Reply = Reply>(
  name: string, script: string, args: string[], execArgv: string[],
): Promise<{ child: IpcChild<Request, Reply>; ready: Ready }> {
  const child = fork(script, args, {
    execArgv,
    env: { ...process.env, ...startEnvironment() },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let exited: Promise<void> = new Promise((resolve) => child.once('exit', () => resolve()));
  const waiting = new Map<number, { resolve: (answer: Reply) => void; reject: (error: Error) => void }>();
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited during start (code ${code})`)));
    child.on('message', (answer: Reply) => {
      if (answer.type === 'ready') { resolve(answer as Ready); return; }
      const pending = answer.id === undefined ? undefined : waiting.get(answer.id);
      if (!pending) return;
      waiting.delete(answer.id!);
      if (answer.type === 'error') pending.reject(new Error(`${name}: ${answer.message}`));
      else pending.resolve(answer);
    });
  });
  child.on('exit', (code) => {
    for (const pending of waiting.values()) pending.reject(new Error(`${name} exited (code ${code})`));
    waiting.clear();
  });
  return {
    ready,
    child: {
      pid: child.pid!,
      ask: (message) => new Promise<Reply>((resolve, reject) => {
        waiting.set(message.id, { resolve, reject });
        child.send(message as object);
      }),
      async stop() {
        if (child.exitCode === null && child.connected) child.send({ type: 'stop' });
        const timeout = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timeout);
        exited = Promise.resolve();
      },
    },
  };
}
