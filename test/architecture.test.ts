/**
 * The seams of the source tree, read from src/ (STYLE.md, "Rules and composition" and "Errors"):
 * services are built only in compose/, faces and the CLI take what they are handed, http/ knows no
 * face, console pages run no SQL, and each face renders its errors in one place.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/paths.ts';

const SRC = join(ROOT, 'src');

/** Every .ts file under src/, as [path relative to src/ with forward slashes, text]. */
const files: [string, string][] = (readdirSync(SRC, { recursive: true }) as string[])
  .filter((name) => name.endsWith('.ts'))
  .map((name) => [relative(SRC, join(SRC, name)).split('\\').join('/'), readFileSync(join(SRC, name), 'utf8')]);

const under = (prefix: string) => files.filter(([path]) => path.startsWith(prefix));

/** The `from '…'` specifiers of a file's imports (static and dynamic). */
function importsOf(text: string): string[] {
  return [...text.matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]);
}

/** Lines of `text` matching `pattern`, as "path:line: text" for the failure message. */
function offending(path: string, text: string, pattern: RegExp): string[] {
  return text.split('\n').flatMap((line, i) => (pattern.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []));
}

test('src/ is read: the tree is where this test expects it', () => {
  assert.ok(files.some(([path]) => path === 'compose/index.ts'));
  assert.ok(files.length > 100);
});

test('services, the mail outbox and its worker are built in compose/ only', () => {
  // A call, not the factory's own definition (`function createUsersService(`).
  const factory = /(?<!function )\b(create[A-Z]\w*Service|createOutbox|createMailWorker|createMailTransport)\(/;
  const calls = files.filter(([path]) => !path.startsWith('compose/')).flatMap(([path, text]) => offending(path, text, factory));
  assert.deepEqual(calls, []);
});

test('no bundle builds parts outside compose: no area.ts files', () => {
  // "area" has one meaning: a group of routes mounted in a face's authenticated scope.
  assert.deepEqual(files.map(([path]) => path).filter((path) => /(^|\/)area\.ts$/.test(path)), []);
});

test('src/http/ is shared by the faces and imports none of them', () => {
  const crossing = under('http/').flatMap(([path, text]) => importsOf(text)
    .filter((spec) => /^\.\.\/(identity|site|console|compose|cli|mail)\//.test(spec))
    .map((spec) => `${path}: ${spec}`));
  assert.deepEqual(crossing, []);
});

test('the console runs no SQL and imports nothing from store/ (its owners/, sessions/ and first-sign-in/ repos aside)', () => {
  const console = under('console/').filter(([path]) => !/^console\/(owners|sessions|first-sign-in)\//.test(path));
  const store = console.flatMap(([path, text]) => importsOf(text).filter((spec) => spec.includes('/store/')).map((spec) => `${path}: ${spec}`));
  assert.deepEqual(store, []);
  const sql = console.flatMap(([path, text]) => offending(path, text, /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql`/));
  assert.deepEqual(sql, []);
});

test('the CLI asks compose for services: it never reaches the store', () => {
  const cli = under('cli/');
  const store = cli.flatMap(([path, text]) => importsOf(text).filter((spec) => spec.includes('/store/')).map((spec) => `${path}: ${spec}`));
  assert.deepEqual(store, []);
  assert.deepEqual(cli.flatMap(([path, text]) => offending(path, text, /\bapp\.(store|masterKey)\b|\.db\b/)), []);
});

test('latchkey --help loads the CLI alone: what cli/main.ts imports statically reaches no package of the service', () => {
  // The CLI is bundled in chunks (scripts/build.mjs --split): a package imported statically anywhere
  // in this closure is loaded by every call, --help included; the service comes with import().
  const texts = new Map(files);
  const packages: string[] = [];
  const seen = new Set<string>();
  const queue = ['cli/main.ts'];
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const text = texts.get(path);
    assert.ok(text !== undefined, `${path} is imported but not under src/`);
    for (const [, spec] of text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
      if (spec === undefined) continue;
      if (spec.startsWith('.')) queue.push(posix.normalize(posix.join(posix.dirname(path), spec)));
      else if (!spec.startsWith('node:')) packages.push(`${spec} (${path})`);
    }
  }
  assert.ok(seen.has('cli/registry.ts') && seen.has('config.ts'), 'the closure holds the commands and the configuration');
  // The mail sender's syntax is checked with nodemailer's parser: one small file.
  assert.deepEqual(packages, ['nodemailer/lib/addressparser (mail/addresses.ts)']);
});

test('each face renders errors in one place: identity/errors.ts and site/errors.ts', () => {
  const handlers = files
    .filter(([path]) => path !== 'identity/errors.ts' && path !== 'site/errors.ts')
    .flatMap(([path, text]) => offending(path, text, /\.setErrorHandler\(/));
  assert.deepEqual(handlers, []);
});
