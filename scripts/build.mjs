#!/usr/bin/env node
/**
 * Bundles a TypeScript entry point and the sources it imports into one ES module under dist/
 * (packages stay imports of node_modules). `npm start` runs the server from this bundle: running
 * the sources through `node --import tsx` keeps a second V8 isolate alive for tsx's module loader
 * (about 35 MiB of RSS for the life of the process). Takes well under a second, so it runs on every start.
 *
 *   node scripts/build.mjs                         # src/main.ts -> dist/main.js
 *   node scripts/build.mjs <entry.ts> <outfile.js> # any other entry (the bench builds its server)
 */
import { build } from 'esbuild';

const [entry = 'src/main.ts', outfile = 'dist/main.js'] = process.argv.slice(2);

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
