/**
 * What the CLI's bundle leaves as imports of node_modules: every package the project depends on, except
 * the few it carries inside it. Those are pure JavaScript in many small files, which Node loads one
 * module at a time: importing kysely (288 ES modules) from node_modules costs about 0.17 s of CPU in
 * every process that does, bundled a few hundredths, and every CLI command is a new process. Only
 * packages with no dependencies of their own qualify: an inlined package's imports would otherwise
 * resolve to the project's node_modules, whatever version it asked for.
 *
 * The server's bundle (and the tests', which stand for it) inline nothing: side by side, users/get ran
 * at 0.89-1.00 of the rate of the same server with these packages external (0.99 against itself), and
 * a server starts once.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const INLINED_PACKAGES = ['kysely', 'jose', 'nodemailer'];

/** @param root the repository: its package.json and node_modules. */
export function bundleExternals(root = '.') {
  const { dependencies = {}, devDependencies = {} } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  for (const name of INLINED_PACKAGES) {
    const manifest = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
    const own = Object.keys(manifest.dependencies ?? {});
    if (own.length > 0) throw new Error(`${name} cannot be inlined into the bundles: it depends on ${own.join(', ')}`);
  }
  return [...Object.keys(dependencies), ...Object.keys(devDependencies)].filter((name) => !INLINED_PACKAGES.includes(name));
}
