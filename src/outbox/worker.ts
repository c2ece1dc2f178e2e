/**
 * The loop that drains an outbox (mail, webhook deliveries): claims due rows in batches, hands
 * them to the outbox's own `process`, polls while idle, and runs soon after a kick (a commit that
 * enqueued a row). Safe on every node: rows are leased (./claim.ts), so a batch is one node's.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

export interface OutboxWorkerOptions<Row> {
  /** Claims up to `limit` due rows for this worker. */
  claim(limit: number, workerId: string): Promise<Row[]>;
  /** Sends a claimed batch and records each outcome; resolves with the number sent. */
  process(rows: Row[]): Promise<number>;
  /** A batch that threw (the claim's database gone, say); the next poll tries again. */
  onBatchError(error: unknown): void;
  /** Names this worker's claims; default `<hostname>:<pid>:<random>`. */
  workerId?: string;
  /** Rows claimed (and processed concurrently) per batch. Default 50. */
  batchSize?: number;
  /** Wait between batches when the outbox had nothing more. Default 1000 ms. */
  pollIntervalMs?: number;
  /**
   * How long a kick() waits for others before its batch starts. Default 50 ms: a burst of commits
   * shares one claim and one batch instead of each starting its own.
   */
  kickDelayMs?: number;
}

export interface OutboxWorker {
  /** Runs a batch now, then keeps polling (timer unref'd); a second start is a no-op. */
  start(): void;
  /** Stops polling and waits for the batch in progress. */
  stop(): Promise<void>;
  /** One batch; resolves with the number of rows sent (0 when a batch is already running here). */
  runOnce(): Promise<number>;
  /**
   * Asks for a batch soon: within kickDelayMs, shared with the kicks that follow in that time
   * (later kicks never postpone it). A no-op until started.
   */
  kick(): void;
  readonly workerId: string;
}

export const newWorkerId = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

export function createOutboxWorker<Row>(options: OutboxWorkerOptions<Row>): OutboxWorker {
  const workerId = options.workerId ?? newWorkerId();
  const batchSize = options.batchSize ?? 50;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const kickDelayMs = options.kickDelayMs ?? 50;

  let running: Promise<number> | undefined;
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now() time). */
  let timerDue = 0;
  /** The last batch was full: more may be waiting at once. */
  let fullBatch = false;
  /** Rows were committed (kick, or runOnce refused) while a batch ran. */
  let kicked = false;

  async function runOnce(): Promise<number> {
    if (running) {
      kicked = true;
      return 0;
    }
    running = runBatch().finally(() => { running = undefined; });
    return running;
  }

  async function runBatch(): Promise<number> {
    const claimed = await options.claim(batchSize, workerId);
    if (claimed.length === 0) return 0;
    const sent = await options.process(claimed);
    // A full batch means more may be waiting.
    if (claimed.length === batchSize) fullBatch = true;
    return sent;
  }

  function schedule(delayMs: number): void {
    if (!started) return;
    if (timer) clearTimeout(timer);
    timerDue = performance.now() + delayMs;
    timer = setTimeout(() => { void tick(); }, delayMs);
    // The server's sockets keep the process alive, not a worker.
    timer.unref();
  }

  async function tick(): Promise<void> {
    timer = undefined;
    try {
      // A batch started by runOnce() or kick() meanwhile: let it finish, then run ours.
      if (running) await running.catch(() => {});
      await runOnce();
    } catch (error) {
      options.onBatchError(error);
    }
    const next = fullBatch ? 0 : kicked ? kickDelayMs : pollIntervalMs;
    fullBatch = false;
    kicked = false;
    schedule(next);
  }

  return {
    workerId,
    start() {
      if (started) return;
      started = true;
      schedule(0);
    },
    async stop() {
      started = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
    runOnce,
    kick() {
      if (!started) return;
      if (running) kicked = true;
      // A batch already due within the delay takes this row too; only a later one (the poll) is brought forward.
      else if (!timer || timerDue > performance.now() + kickDelayMs) schedule(kickDelayMs);
    },
  };
}

/** An error's code and message, for a log line or a row's last_error. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
