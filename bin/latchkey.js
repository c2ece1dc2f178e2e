#!/usr/bin/env node
// The CLI runs from a bundle of its sources (dist/cli.js and the chunks it loads when a command runs),
// built by scripts/build.mjs when a source is newer than it: loading the TypeScript sources through tsx
// on every call took seconds. The build puts the new bundle in place whole, so a call running at the
// same time never reads half of it. Where the checkout is not writable, the sources run through tsx as before.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isBundleCurrent } from '../scripts/bundle-state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);

if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  process.stdout.write(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version + '\n');
  process.exit(0);
}

const bundle = join(root, 'dist', 'cli.js');

function build() {
  try {
    mkdirSync(join(root, 'dist'), { recursive: true });
    execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--split', 'src/cli/main.ts', bundle], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    return true;
  } catch {
    return false;
  }
}

if (isBundleCurrent(root, bundle) || build()) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
