/** The only source of "now" for domain code, so tests move time instead of sleeping. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until moved: for tests. */
export interface TestClock extends Clock {
  set(ms: number): void;
  advance(ms: number): void;
}

export function createTestClock(startMs = Date.UTC(2026, 0, 15, 12, 0, 0)): TestClock {
  let current = startMs;
  return {
    now: () => current,
    set: (ms) => { current = ms; },
    advance: (ms) => { current += ms; },
  };
}
