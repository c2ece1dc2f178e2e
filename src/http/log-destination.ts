/**
 * Where the JSON log lines go by default: stdout, written synchronously once per turn of the event
 * loop with every line of that turn (both faces share it). Line by line, the write was a tenth of a
 * small request's cost; pino's own asynchronous destination hands each line to libuv's thread pool
 * instead, a thread hop per request, and a size-buffered one holds lines back while traffic is low.
 * A line is out at the latest when the turn that logged it ends, and on exit (a crash included).
 */
import { writeSync } from 'node:fs';

export interface LogDestination {
  write(line: string): void;
}

let stdout: LogDestination | undefined;
const pause = new Int32Array(new SharedArrayBuffer(4));

export function stdoutLog(): LogDestination {
  return (stdout ??= createLogDestination(1));
}

function createLogDestination(fd: number): LogDestination {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const buffer = Buffer.from(pending.join(''));
    pending = [];
    // A write may take only part of the bytes (a nearly full pipe): write the rest too.
    for (let offset = 0; offset < buffer.length;) {
      try {
        offset += writeSync(fd, buffer, offset);
      } catch (error) {
        // A full non-blocking pipe: wait a moment for the reader; anything else (nobody reads any
        // more): drop the lines.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        Atomics.wait(pause, 0, 0, 5);
      }
    }
  };
  process.once('exit', flush);
  return {
    write(line) {
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
  };
}
