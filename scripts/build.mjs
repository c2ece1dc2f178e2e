#!/usr/bin/env node
/**
 * Bundles a TypeScript entry point and the sources it imports into one ES module under dist/
 * (packages stay imports of node_modules). `npm start` runs the server from this bundle with plain
 * `node`: running the sources through `node --import tsx` keeps tsx's loader alive in the server
 * for its whole life (about 35 MiB of memory).
 *
 *   node scripts/build.mjs                         # src/main.ts -> dist/main.js
 *   node scripts/build.mjs --if-stale              # the same, only when a source is newer than the bundle
 *   node scripts/build.mjs <entry.ts> <outfile.js> # any other entry (the bench builds its server)
 */
import { build } from 'esbuild';
import { isBundleCurrent } from './bundle-state.mjs';

const args = process.argv.slice(2);
const ifStale = args.includes('--if-stale');
const [entry = 'src/main.ts', outfile = 'dist/main.js'] = args.filter((arg) => arg !== '--if-stale');

if (!(ifStale && isBundleCurrent('.', outfile))) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
}
