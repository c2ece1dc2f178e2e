#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's test runner (Node 20 does not expand globs itself).
// Extra arguments narrow the run: `npm test -- test/identity` or a single file.
//
// The test files run as JavaScript bundles, not through tsx: each file is a process of its own, and each paid
// tsx's loader again (23 files took 143 s of CPU through tsx, 101 s bundled). esbuild bundles every test file
// with what it imports, with shared chunks so that a module is still one instance per process, into
// dist/.tests-<pid>/, removed afterwards. Source maps make a failure's stack name the .ts lines. The tests find
// the repository through test/helpers/paths.ts, not their own location.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';

function collect(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path).sort().flatMap((name) => (name === 'node_modules' ? [] : collect(join(path, name))));
}

/** Whether the process that made a bundle directory still runs (a run stopped by Ctrl-C leaves its own). */
function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

const roots = process.argv.slice(2);
const files = (roots.length ? roots : ['test']).flatMap(collect);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

mkdirSync('dist', { recursive: true });
for (const name of readdirSync('dist')) {
  const pid = /^\.tests-(\d+)$/.exec(name)?.[1];
  if (pid && !running(Number(pid))) rmSync(join('dist', name), { recursive: true, force: true });
}
const outdir = join('dist', `.tests-${process.pid}`);
// What the package depends on stays an import of node_modules; the workspace's own packages (packages/*, whose
// entry points are TypeScript) are bundled like the tests.
const { dependencies = {}, devDependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
let status = 1;
try {
  await build({
    entryPoints: files,
    outdir,
    outbase: '.',
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: [...Object.keys(dependencies), ...Object.keys(devDependencies)],
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  const bundles = files.map((file) => join(outdir, relative('.', file).replace(/\.ts$/, '.js')));
  // Three files at once: a file's process spends much of its time waiting on a browser, a database or a child
  // process, and at two the two cores were busy 155 % of the run.
  // A test that waits for good (a browser that stopped answering) fails after 15 minutes instead of holding
  // the run until CI's limit. The runner puts each file as a whole under the same bound, and the docs run
  // (the README's tour and every page of docs/, on both stores) took over 5 minutes in a full run.
  const result = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=3', '--test-timeout=900000', ...bundles], { stdio: 'inherit' });
  status = result.status ?? 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
process.exit(status);
