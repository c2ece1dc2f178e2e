/**
 * The repository's root: the directory of the package.json above this module. The tests run from a bundle
 * under dist/ (scripts/test.mjs), so a test's own location does not say where the repository is. Neither
 * dist/ nor test/ has a package.json, so from the bundle or the sources the first one above is the repository's.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  throw new Error('no package.json above the tests');
}

export const ROOT = findRoot();
