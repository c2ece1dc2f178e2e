/**
 * The parent's handle on the bench's SMTP sink (bench/smtp-sink-child.ts in a child process): the
 * server under test sends its mail there (LATCHKEY_SMTP_URL), scenarios read how many arrived and when.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SinkReply, SinkRequest } from './smtp-sink-child.ts';

export interface SmtpSinkHandle {
  /** smtp://127.0.0.1:<port> */
  url: string;
  /**
   * How many messages arrived so far, when the `from`-th (0-based) arrived and when the latest did
   * (epoch milliseconds, sub-millisecond precision).
   */
  stats(from?: number): Promise<{ received: number; firstAt?: number; lastAt?: number }>;
  stop(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSinkHandle> {
  const child = fork(fileURLToPath(new URL('./smtp-sink-child.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the SMTP sink exited (${code})`)));
    child.on('message', (message: SinkReply) => { if (message.type === 'ready') resolve(message.port); });
  });
  let nextId = 0;
  const waiting = new Map<number, (reply: Extract<SinkReply, { type: 'stats' }>) => void>();
  child.on('message', (message: SinkReply) => {
    if (message.type === 'stats') { waiting.get(message.id)?.(message); waiting.delete(message.id); }
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    stats(from = 0) {
      const id = nextId++;
      return new Promise((resolve) => {
        waiting.set(id, ({ received, firstAt, lastAt }) => resolve({ received, ...(firstAt !== undefined ? { firstAt } : {}), ...(lastAt !== undefined ? { lastAt } : {}) }));
        child.send({ type: 'stats', id, from } satisfies SinkRequest);
      });
    },
    async stop() {
      if (child.exitCode !== null || !child.connected) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' } satisfies SinkRequest);
      await exited;
    },
  };
}
