/**
 * Progress of long CLI work (users import and export) on stderr, so stdout stays machine-readable.
 * On a terminal: a bar redrawn in place, at most ten times a second, with the count, the rate and the time
 * left. Without one (a log, CI): a plain line every few seconds, so the work is never silent. Either way
 * the last line is drawn from the final count (100 % when every row counted beforehand is done): a redraw
 * skipped by the rate limit never leaves an old count on screen.
 */

/** The part of a stream progress writes to (process.stderr, or a test's fake). */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** What is being done, the start of every line: "users import". */
  task: string;
  /** What is counted: "rows", "users". */
  unit: string;
  /** How many there are, when known beforehand (the percentage and the time left need it). */
  total?: number;
  stream?: ProgressStream;
  /** Milliseconds; a dependency so that tests move time instead of waiting. */
  now?: () => number;
  /** Without a terminal: the least time between two lines, in ms (0: a line at every update). */
  intervalMs?: number;
}

export interface Progress {
  /** `done` of the total are done. */
  update(done: number): void;
  /** The work is over, `done` done in all: the last line, with `summary` (e.g. the counts) after it. */
  finish(done: number, summary?: string): void;
  /** The work failed: end the bar's line, claim nothing more. */
  abort(): void;
}

export const DEFAULT_PROGRESS_INTERVAL_MS = 5000;
const TTY_REDRAW_MS = 100;
const WIDTH = 24;

// Plain digits, as the summaries print them: a log is searched and parsed.
const count = (n: number) => String(n);

/** 75 s → "1 min 15 s"; 4 s → "4 s". */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function createProgress(options: ProgressOptions): Progress {
  const { task, unit, stream = process.stderr, now = Date.now, intervalMs = DEFAULT_PROGRESS_INTERVAL_MS } = options;
  const tty = stream.isTTY === true;
  const startedAt = now();
  let total = options.total;
  let done = 0;
  let lastAt = startedAt;
  let drawn = false;
  let over = false;

  /** "12400/20000 rows (62 %), 1850 rows/s, about 4 s left" */
  function describe(final: boolean): string {
    const elapsed = now() - startedAt;
    const rate = elapsed > 0 ? (done * 1000) / elapsed : 0;
    const parts = [total !== undefined ? `${count(done)}/${count(total)} ${unit} (${total === 0 ? 100 : Math.floor((done / total) * 100)} %)` : `${count(done)} ${unit}`];
    if (final) parts.push(`in ${formatDuration(elapsed)}`);
    if (rate > 0) parts.push(`${count(Math.round(rate))} ${unit}/s`);
    if (!final && total !== undefined && rate > 0 && done < total) parts.push(`about ${formatDuration(Math.max(1000, ((total - done) / rate) * 1000))} left`);
    return parts.join(', ');
  }

  function draw(final: boolean, summary?: string): void {
    const text = describe(final) + (summary ? `; ${summary}` : '');
    if (tty) {
      const fraction = total === undefined || total === 0 ? (final ? 1 : 0) : Math.min(done / total, 1);
      const filled = Math.round(fraction * WIDTH);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${text}\x1b[K${final ? '\n' : ''}`);
    } else {
      stream.write(`latchkey: ${task}: ${text}\n`);
    }
    drawn = true;
  }

  return {
    update(value) {
      if (over) return;
      done = value;
      const at = now();
      // A terminal is redrawn at most ten times a second (a fast import would spend its time there);
      // a log gets a line every interval.
      if (at - lastAt < (tty ? (drawn ? TTY_REDRAW_MS : 0) : intervalMs)) return;
      lastAt = at;
      draw(false);
    },
    finish(value, summary) {
      if (over) return;
      over = true;
      done = value;
      // What was done is the whole: a count made beforehand may be off (the file changed meanwhile).
      total = done;
      draw(true, summary);
    },
    abort() {
      if (over) return;
      over = true;
      if (tty && drawn) stream.write('\n');
    },
  };
}
