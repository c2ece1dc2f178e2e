/** A one-line progress bar on stderr, only when stderr is a terminal: stdout stays machine-readable. */
export interface ProgressBar {
  update(fraction: number, label: string): void;
  done(): void;
}

const WIDTH = 30;

export function createProgressBar(stream: NodeJS.WriteStream = process.stderr): ProgressBar {
  if (!stream.isTTY) return { update() {}, done() {} };
  let shown = false;
  let lastAt = 0;
  return {
    update(fraction, label) {
      const now = Date.now();
      // At most ten redraws a second: a fast import would otherwise spend its time on the terminal.
      if (now - lastAt < 100 && fraction < 1) return;
      lastAt = now;
      const filled = Math.round(Math.min(Math.max(fraction, 0), 1) * WIDTH);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${label}\x1b[K`);
      shown = true;
    },
    done() {
      if (shown) stream.write('\n');
    },
  };
}
