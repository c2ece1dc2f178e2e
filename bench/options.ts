/** Command-line options of `npm run bench`; every problem reported at once, like config.ts. */

export type StoreKind = 'sqlite' | 'postgres';

export interface BenchOptions {
  store: StoreKind;
  /** PostgreSQL server URL (a fresh schema is created in it and dropped at the end). */
  postgresUrl: string;
  users: number;
  /** Seconds per measurement. */
  durationSeconds: number;
  /** Seconds of unmeasured load before each measurement (JIT, caches). */
  warmupSeconds: number;
  connections: number;
  /** Scenario names (or name prefixes) to run; empty = all. */
  only: string[];
  /** Log level of the server under test: `info` is what `npm start` logs. */
  logLevel: string;
  /** Longest wait, in seconds, for the idle server's memory to settle (V8 shrinks its heap after ~30 s idle). */
  idleSeconds: number;
  /** Extra Node.js flags for the server under test, e.g. "--max-semi-space-size=4". */
  nodeFlags: string[];
  /** Write a V8 CPU profile of the server under test and print its hottest functions. */
  profile: boolean;
  /** Write a V8 heap snapshot of the server under test after the run (in the kept working directory). */
  heapSnapshot: boolean;
  /** Keep the temporary directory (database, profile, results) instead of deleting the database. */
  keep: boolean;
  /** A git ref: its server runs beside this one, and each scenario that can is measured on both (bench/baseline.ts). */
  baseline?: string;
  help: boolean;
}

export const USAGE = `Usage: npm run bench -- [options]

  --users N          users to seed (default 100000; the large run uses 1000000)
  --store S          sqlite (default, in a temporary data directory) or postgres
                     (LATCHKEY_BENCH_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test,
                     in a fresh schema dropped at the end)
  --duration N       seconds per measured route (default 10), in interleaved slices
  --warmup N         seconds of unmeasured load before each measurement (default 2)
  --connections N    concurrent connections (default 10)
  --only NAME        run only this scenario (repeatable, or comma-separated; prefixes match)
  --log-level L      server log level (default info, what npm start uses; "silent" turns logs off)
  --idle N           wait up to N s for idle memory to settle, before and after load (default 120;
                     V8 gives heap back after ~30 s idle; 0 measures at once)
  --node-flags "F"   extra Node.js flags for the server under test (e.g. "--max-semi-space-size=4")
  --profile          CPU-profile the server under test (run from its sources) and print its hottest functions
  --heap-snapshot    after the run (and its idle wait), write a V8 heap snapshot of the server under
                     test into the working directory, to open in Chrome DevTools' Memory tab
  --keep             keep the temporary SQLite database after the run
  --baseline REF     also build and start the server of git ref REF (a temporary worktree, its own
                     database seeded by its own code) and measure each chosen scenario on both, in
                     interleaved slices: ratio this/baseline beside each one's ratio to the ceiling
                     (scenarios users-get, users-getall, users-update, magiclink-generate, scim-users-filter)
  --help             this text

  LATCHKEY_BENCH_REDIS_URL=redis://… puts the server's replay guard, rate limits and throttles in Redis.
`;

export function parseOptions(argv: string[], env: Record<string, string | undefined>): BenchOptions {
  const problems: string[] = [];
  const options: BenchOptions = {
    store: 'sqlite',
    postgresUrl: env.LATCHKEY_BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test',
    users: 100_000,
    durationSeconds: 10,
    warmupSeconds: 2,
    connections: 10,
    only: [],
    logLevel: 'info',
    idleSeconds: 120,
    nodeFlags: [],
    profile: false,
    heapSnapshot: false,
    keep: false,
    help: false,
  };
  const int = (name: string, raw: string | undefined, min: number, max: number): number => {
    if (raw === undefined || !/^\d+$/.test(raw.replace(/_/g, ''))) { problems.push(`${name} needs a whole number`); return min; }
    const n = Number(raw.replace(/_/g, ''));
    if (n < min || n > max) problems.push(`${name} must be between ${min} and ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--users': options.users = int(flag, value(), 1, 50_000_000); break;
      case '--store': {
        const store = value();
        if (store === 'sqlite' || store === 'postgres') options.store = store;
        else problems.push('--store must be sqlite or postgres');
        break;
      }
      case '--duration': options.durationSeconds = int(flag, value(), 1, 3600); break;
      case '--warmup': options.warmupSeconds = int(flag, value(), 0, 600); break;
      case '--connections': options.connections = int(flag, value(), 1, 1000); break;
      case '--only': options.only.push(...(value() ?? '').split(',').map((s) => s.trim()).filter(Boolean)); break;
      case '--log-level': options.logLevel = value() ?? 'info'; break;
      case '--idle': options.idleSeconds = int(flag, value(), 0, 600); break;
      case '--node-flags': options.nodeFlags.push(...(value() ?? '').split(/\s+/).filter(Boolean)); break;
      case '--profile': options.profile = true; break;
      case '--heap-snapshot': options.heapSnapshot = true; break;
      case '--keep': options.keep = true; break;
      case '--baseline': {
        const ref = value();
        if (ref && /^[A-Za-z0-9][A-Za-z0-9._/^~-]{0,99}$/.test(ref)) options.baseline = ref;
        else problems.push('--baseline needs a git ref (a commit, branch or tag)');
        break;
      }
      case '--help': case '-h': options.help = true; break;
      default: problems.push(`unknown option ${arg}`);
    }
  }
  if (!['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'].includes(options.logLevel)) problems.push('--log-level must be a pino level or silent');
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\n\n${USAGE}`);
  return options;
}
