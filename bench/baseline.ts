/**
 * `--baseline <git-ref>`: a second server under test built from another commit, for side-by-side
 * figures ("within 10 % of the same write today"). The ref is checked out with `git worktree add
 * --detach` into the run's temporary directory, node_modules hard-linked from this checkout
 * (`cp -al`: no copy, no install), and its database set up by its own code (bench/baseline-setup.ts
 * imports the ref's store, composition and seeding): its schema is its own, never this branch's.
 * The worktree is removed at the end, also when the run fails.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const setupScript = fileURLToPath(new URL('./baseline-setup.ts', import.meta.url));

export interface BaselineCheckout {
  ref: string;
  /** The commit the ref names (abbreviated), for the report. */
  commit: string;
  /** The worktree: its bench/server.ts is the baseline server. */
  root: string;
  remove(): Promise<void>;
}

/** @throws when `ref` names no commit (before anything is created). */
export async function checkOutBaseline(ref: string, dir: string): Promise<BaselineCheckout> {
  const { stdout } = await run('git', ['rev-parse', '--verify', '--short', `${ref}^{commit}`], { cwd: root }).catch(() => {
    throw new Error(`--baseline ${ref}: not a commit of this repository`);
  });
  const commit = stdout.trim();
  const path = join(dir, 'baseline');
  await run('git', ['worktree', 'add', '--detach', path, commit], { cwd: root });
  const remove = async () => {
    await run('git', ['worktree', 'remove', '--force', path], { cwd: root }).catch(async () => {
      await run('rm', ['-rf', path]);
      await run('git', ['worktree', 'prune'], { cwd: root });
    });
  };
  try {
    await run('cp', ['-al', join(root, 'node_modules'), join(path, 'node_modules')]);
    if (!existsSync(join(path, 'bench', 'server.ts'))) throw new Error(`--baseline ${ref}: the commit has no bench/server.ts`);
  } catch (error) {
    await remove();
    throw error;
  }
  return { ref, commit, root: path, remove };
}

export interface BaselineCustomer { customerId: number; customerKey: string; apiKey: string }

/**
 * Migrates the baseline's database, makes its bench customer and seeds `users` users with the ref's
 * own code, in a child process (one copy of each native module per process).
 */
export async function setUpBaseline(checkout: BaselineCheckout, options: { database: string; schema?: string; dataDir: string; users: number }): Promise<BaselineCustomer> {
  const args = ['--import', 'tsx', setupScript, '--root', checkout.root, '--database', options.database, '--data-dir', options.dataDir, '--users', String(options.users)];
  if (options.schema) args.push('--schema', options.schema);
  const child = execFile(process.execPath, args, { cwd: root, maxBuffer: 1 << 20 });
  child.stderr?.pipe(process.stderr);
  const output = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => { out += chunk; });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`baseline setup exited with code ${code}`))));
  });
  return JSON.parse(output.trim().split('\n').at(-1)!) as BaselineCustomer;
}
