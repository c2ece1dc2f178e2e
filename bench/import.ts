/**
 * `latchkey users import` at scale on a SQLite file, through the CLI as an operator runs it (a child
 * process each time, start-up included):
 *   1. N rows with passwordHash (no hashing: the import's own cost), timed;
 *   2. the same file again (every row unchanged), timed;
 *   3. M rows with plain passwords (argon2id per row), timed, and the rate scaled to N.
 * Peak memory of each run is the child's VmHWM.
 *
 *   node --import tsx bench/import.ts --rows 100000 --plain-rows 2000   → one JSON line
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { compose } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { hashPassword } from '../src/lib/passwords.ts';

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const rows = argument('rows', 100_000);
const plainRows = argument('plain-rows', 2_000);
const dir = mkdtempSync(join(tmpdir(), 'latchkey-import-bench-'));
const env = {
  ...process.env,
  LATCHKEY_DATA_DIR: dir,
  LATCHKEY_DATABASE_URL: join(dir, 'latchkey.sqlite'),
  LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
  LATCHKEY_LOG_LEVEL: 'silent',
};

async function writeCsv(file: string, count: number, password: (i: number) => { password?: string; passwordHash?: string }, prefix: string): Promise<void> {
  const out = createWriteStream(file);
  out.write('username,email,firstName,lastName,phone,groups,customAttribute1,password,passwordHash\n');
  for (let i = 1; i <= count; i++) {
    const p = password(i);
    const line = `${prefix}${i},${prefix}${i}@example.test,First${i},Last${i},+1 555 ${String(i).padStart(7, '0')},team${i % 20};all,dept-${i % 7},${p.password ?? ''},"${p.passwordHash ?? ''}"\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Runs the CLI; resolves with its seconds, its peak resident memory and its --json summary. */
async function timedImport(file: string, customerKey: string): Promise<{ seconds: number; peakRssMiB: number; summary: Record<string, unknown> }> {
  const start = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'users', 'import', file, '--customer-key', customerKey, '--json'],
    { env, cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  let peakKiB = 0;
  const sampler = setInterval(() => {
    try {
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (match) peakKiB = Math.max(peakKiB, Number(match[1]));
    } catch { /* gone */ }
  }, 50);
  const [code] = await once(child, 'exit');
  clearInterval(sampler);
  if (code !== 0) throw new Error(`import exited ${code}: ${stdout}`);
  return { seconds: (performance.now() - start) / 1000, peakRssMiB: Math.round(peakKiB / 1024), summary: JSON.parse(stdout) };
}

const composition = await compose(loadConfig(env));
const customer = await composition.services.customers.create({ email: 'bench@example.test' });
await composition.close();

const hash = await hashPassword('violet-otter-harbour-42');
const hashed = join(dir, 'hashed.csv');
await writeCsv(hashed, rows, () => ({ passwordHash: hash }), 'user');
const plain = join(dir, 'plain.csv');
await writeCsv(plain, plainRows, (i) => ({ password: `violet-otter-${i}-harbour` }), 'plain');

const first = await timedImport(hashed, customer.customerKey);
const second = await timedImport(hashed, customer.customerKey);
const plainRun = await timedImport(plain, customer.customerKey);
const report = {
  rows,
  fileMiB: +(statSync(hashed).size / 2 ** 20).toFixed(1),
  withHashes: { seconds: +first.seconds.toFixed(1), rowsPerSecond: Math.round(rows / first.seconds), peakRssMiB: first.peakRssMiB, summary: { ...first.summary, errors: undefined } },
  secondRunUnchanged: { seconds: +second.seconds.toFixed(1), peakRssMiB: second.peakRssMiB, summary: { ...second.summary, errors: undefined } },
  plainPasswords: {
    rows: plainRows, seconds: +plainRun.seconds.toFixed(1), rowsPerSecond: Math.round(plainRows / plainRun.seconds),
    projectedSecondsFor: { rows, seconds: Math.round(rows / (plainRows / plainRun.seconds)) },
  },
};
process.stdout.write(JSON.stringify(report) + '\n');
rmSync(dir, { recursive: true, force: true });
