#!/usr/bin/env node
/**
 * Bundles a TypeScript entry point and the sources it imports into ES modules under dist/ (packages
 * stay imports of node_modules; the CLI's split bundle carries a few inside it, see
 * scripts/bundle-externals.mjs). `npm start` runs the server from this bundle with plain `node`:
 * running the sources through `node --import tsx` keeps tsx's loader alive in the server for its
 * whole life (about 35 MiB of memory).
 *
 *   node scripts/build.mjs                         # src/main.ts -> dist/main.js
 *   node scripts/build.mjs --if-stale              # the same, only when a source is newer than the bundle
 *   node scripts/build.mjs <entry.ts> <outfile.js> # any other entry (the bench builds its server)
 *   node scripts/build.mjs --split <entry.ts> <outfile.js>
 *
 * --split (the CLI): what the entry imports with `import()` goes to chunks beside it, loaded when
 * that code runs, so `latchkey --help` does not load the packages of the service. One file, as
 * esbuild writes it, lists every package its modules import at its top, the lazily loaded ones too.
 * A split build replaces the last without a reader ever seeing half of it: the chunks' names hold
 * their content's hash, so new ones never overwrite a file in use, and the entry is renamed into
 * place last.
 */
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { bundleExternals } from './bundle-externals.mjs';
import { isBundleCurrent } from './bundle-state.mjs';

const args = process.argv.slice(2);
const ifStale = args.includes('--if-stale');
const split = args.includes('--split');
const [entry = 'src/main.ts', outfile = 'dist/main.js'] = args.filter((arg) => !arg.startsWith('--'));

const common = { entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning' };

/** Chunks no build has written for this long belong to no process still starting (a CLI call loads its chunks at once). */
const STALE_CHUNK_MS = 60 * 60 * 1000;

async function buildSplit() {
  const dir = dirname(outfile);
  const name = basename(outfile, '.js');
  const chunks = `${name}-chunks`;
  const staging = join(dir, `.${name}-${process.pid}`);
  try {
    const { metafile } = await build({
      ...common, external: bundleExternals(), outdir: staging, splitting: true, entryNames: name, chunkNames: `${chunks}/[name]-[hash]`, metafile: true,
    });
    mkdirSync(join(dir, chunks), { recursive: true });
    const written = new Set();
    for (const output of Object.keys(metafile.outputs)) {
      const file = basename(output);
      if (file === `${name}.js`) continue;
      written.add(file);
      renameSync(join(staging, chunks, file), join(dir, chunks, file));
    }
    renameSync(join(staging, `${name}.js`), outfile);
    for (const file of readdirSync(join(dir, chunks))) {
      const path = join(dir, chunks, file);
      if (!written.has(file) && Date.now() - statSync(path).mtimeMs > STALE_CHUNK_MS) rmSync(path, { force: true });
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (!(ifStale && isBundleCurrent('.', outfile))) {
  if (split) await buildSplit();
  else await build({ ...common, packages: 'external', outfile });
}
