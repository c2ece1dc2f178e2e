/**
 * The README and docs/ run as written. Conventions (stated in the README's tour too):
 *
 * - every ```sh block runs, from the repository's directory: first the README's tour in one bash session,
 *   then each page of docs/ on its own after it, in a fresh session that has the tour's variables and
 *   functions, a copy of its data directory and its server running (so a page never depends on another
 *   page having run); ```sh no-run blocks are shown only (installing, long benchmarks);
 * - a ```json or ```text block that directly follows a run block (nothing but blank lines between) is that
 *   block's expected stdout. json: the same sequence of JSON values; text: the same lines. `…` stands for
 *   what varies, and always for something: the string "…" matches any value but null and "", `…` inside a
 *   string or a text line matches one character or more, and a key "…" in an object allows keys that are
 *   not shown;
 * - a block must exit 0; the sessions have a fresh TMPDIR (the tour's data directory is made in it; the
 *   pages themselves must not need TMPDIR, which is often unset) and free ports in LATCHKEY_IDENTITY_PORT /
 *   LATCHKEY_SITE_PORT / LATCHKEY_MANAGEMENT_PORT, so they never meet a server already running on the
 *   defaults; SQLite whatever the caller's environment says, and again on PostgreSQL when
 *   LATCHKEY_TEST_POSTGRES_URL is set (a database for the tour, cloned for each page, dropped at the end).
 *
 * It also checks that the documents stand alone: relative links resolve, and nothing refers to papers that
 * are not in the repository.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { freePort } from './helpers/ports.ts';
import { postgresUrl } from './helpers/stores.ts';
import { ROOT } from './helpers/paths.ts';

/** README.md (its tour runs first), then every page of docs/; each page runs alone after the tour. */
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).sort().map((n) => `docs/${n}`)];
const BLOCK_TIMEOUT_MS = 60_000;
const WILDCARD = '…';

interface Block { file: string; line: number; info: string[]; code: string }
interface Step { block: Block; expected?: Block }

export function blocks(file: string, text: string): Block[] {
  const found: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]);
    found.push({ file, line: start + 1, info: open[1].trim().split(/\s+/).filter(Boolean), code: body.join('\n') });
  }
  return found;
}

/** Run blocks with the block that gives their expected output. */
function steps(file: string, text: string): Step[] {
  const all = blocks(file, text);
  const lines = text.split('\n');
  const result: Step[] = [];
  for (let i = 0; i < all.length; i++) {
    const block = all[i];
    if (block.info[0] !== 'sh' || block.info.includes('no-run')) continue;
    const next = all[i + 1];
    const closing = block.line + block.code.split('\n').length + 1; // 1-based line of the closing fence
    const adjacent = next !== undefined && lines.slice(closing, next.line - 1).every((l) => l.trim() === '');
    const isOutput = adjacent && (next.info[0] === 'json' || next.info[0] === 'text') && !next.info.includes('no-run');
    result.push({ block, expected: isOutput ? next : undefined });
  }
  return result;
}

/** The JSON values of a text, one after another (as curl prints them, or pretty-printed). */
function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i])) { i++; continue; }
    let j = i;
    if (text[i] === '{' || text[i] === '[') {
      let depth = 0;
      let inString = false;
      for (; j < text.length; j++) {
        const c = text[j];
        if (inString) {
          if (c === '\\') j++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') { depth--; if (depth === 0) break; }
      }
      j++;
    } else if (text[i] === '"') {
      for (j = i + 1; j < text.length && text[j] !== '"'; j++) if (text[j] === '\\') j++;
      j++;
    } else {
      while (j < text.length && !/\s/.test(text[j])) j++;
    }
    values.push(JSON.parse(text.slice(i, j)));
    i = j;
  }
  return values;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** `…` in a string or a text line stands for one character or more, never for nothing. */
const pattern = (s: string) => new RegExp('^' + s.split(WILDCARD).map(escape).join('[\\s\\S]+') + '$');

/** Where `actual` differs from `expected` (with wildcards), or undefined. */
function mismatch(expected: unknown, actual: unknown, path = '$'): string | undefined {
  // A placeholder stands for a value: never for null, an empty string or nothing.
  if (expected === WILDCARD) return actual === undefined || actual === null || actual === '' ? `${path}: expected a value, got ${JSON.stringify(actual)}` : undefined;
  if (typeof expected === 'string') {
    return typeof actual === 'string' && pattern(expected).test(actual) ? undefined : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${path}: expected ${expected.length} elements, got ${JSON.stringify(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const found = mismatch(expected[i], actual[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${path}: expected an object, got ${JSON.stringify(actual)}`;
    const open = WILDCARD in expected;
    for (const [key, value] of Object.entries(expected)) {
      if (key === WILDCARD) continue;
      if (!(key in actual)) return `${path}.${key}: missing in ${JSON.stringify(actual)}`;
      const found = mismatch(value, (actual as Record<string, unknown>)[key], `${path}.${key}`);
      if (found) return found;
    }
    const extra = Object.keys(actual).filter((key) => !(key in expected));
    if (!open && extra.length > 0) return `${path}: keys not shown in the docs: ${extra.join(', ')} in ${JSON.stringify(actual)}`;
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

function compare(expected: Block, stdout: string): string | undefined {
  if (expected.info[0] === 'json') {
    let actual: unknown[];
    try {
      actual = jsonValues(stdout);
    } catch (error) {
      return `stdout is not JSON (${(error as Error).message})`;
    }
    return mismatch(jsonValues(expected.code), actual);
  }
  const want = expected.code.replace(/\n+$/, '').split('\n');
  const got = stdout.replace(/\n+$/, '').split('\n');
  if (want.length !== got.length) return `expected ${want.length} lines, got ${got.length}`;
  const line = want.findIndex((w, i) => !pattern(w).test(got[i]));
  return line < 0 ? undefined : `line ${line + 1}: expected ${JSON.stringify(want[line])}, got ${JSON.stringify(got[line])}`;
}

/** One bash session; run() sources a block in it and returns its stdout, stderr and status. */
class Session {
  private readonly bash: ChildProcessWithoutNullStreams;
  private output = '';
  private waiting?: () => void;
  private count = 0;

  constructor(private readonly dir: string, env: NodeJS.ProcessEnv) {
    // Its own process group, so the server it starts in the background ends with it.
    this.bash = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env, detached: true });
    this.bash.stdout.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.waiting?.();
    });
    this.bash.stderr.resume();
  }

  async run(code: string): Promise<{ stdout: string; stderr: string; status: number }> {
    const n = ++this.count;
    const file = (name: string) => join(this.dir, `block-${n}.${name}`);
    writeFileSync(file('sh'), code + '\n');
    const marker = `__block_${n}_done__`;
    this.bash.stdin.write(`source ${file('sh')} > ${file('out')} 2> ${file('err')} < /dev/null; echo "$?" > ${file('status')}; echo ${marker}\n`);
    const deadline = Date.now() + BLOCK_TIMEOUT_MS;
    while (!this.output.includes(marker)) {
      if (Date.now() > deadline) throw new Error(`block did not finish within ${BLOCK_TIMEOUT_MS / 1000} s`);
      await new Promise<void>((done) => {
        const timer = setTimeout(done, 1000);
        this.waiting = () => { clearTimeout(timer); done(); };
      });
    }
    return { stdout: readFileSync(file('out'), 'utf8'), stderr: readFileSync(file('err'), 'utf8'), status: Number(readFileSync(file('status'), 'utf8')) };
  }

  async close(): Promise<void> {
    const exited = new Promise((done) => this.bash.once('exit', done));
    try {
      process.kill(-this.bash.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await exited;
  }
}

/** What the README's tour left behind for the pages: its variables, its functions and its data directory. */
interface Tour { vars: string; funcs: string; snapshot: string; dataDir: string }

/** Runs a document's blocks in the session; fails naming the block and its output. */
async function runDocument(session: Session, dir: string, document: string): Promise<void> {
  for (const { block, expected } of steps(document, readFileSync(join(ROOT, document), 'utf8'))) {
    const where = `${block.file}:${block.line}`;
    const result = await session.run(block.code);
    // DOCS_TEST_PRINT=1 shows what every block printed: a help for writing the expected blocks.
    if (process.env.DOCS_TEST_PRINT) process.stderr.write(`\n=== ${where} (exit ${result.status})\n${result.stdout}${result.stderr ? `--- stderr\n${result.stderr}` : ''}`);
    const log = () => {
      const server = readdirSync(dir).map((d) => join(dir, d, 'server.log')).filter((f) => existsSync(f)).map((f) => readFileSync(f, 'utf8').slice(-3000));
      return `\n--- block\n${block.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}\n--- server log (end)\n${server.join('\n')}`;
    };
    assert.equal(result.status, 0, `${where}: exit status ${result.status}${log()}`);
    if (expected) {
      const problem = compare(expected, result.stdout);
      assert.equal(problem, undefined, `${where}: output differs from ${expected.file}:${expected.line}: ${problem}${log()}`);
    }
  }
}

/**
 * The store's database for the tour and one for each page, copied from the tour's once its server has
 * stopped: the SQLite file travels with the data directory; a PostgreSQL database is cloned (TEMPLATE).
 */
interface DocsStore {
  /** Makes the tour's database; returns the environment that names it. */
  tour(): Promise<Record<string, string>>;
  /** Copies the tour's database for a page (its server stopped); returns the environment that names the copy. */
  page(n: number): Promise<Record<string, string>>;
  close(): Promise<void>;
}

const sqliteDocsStore: DocsStore = { tour: async () => ({}), page: async () => ({}), close: async () => {} };

function postgresDocsStore(url: string): DocsStore {
  const prefix = `lk_docs_${process.pid}_${Date.now() % 100000}`;
  const made: string[] = [];
  const create = async (name: string, template?: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`create database ${name}${template ? ` template ${template}` : ''}`);
      made.push(name);
    } finally {
      await client.end();
    }
    const target = new URL(url);
    target.pathname = `/${name}`;
    return { LATCHKEY_DATABASE_URL: target.toString() };
  };
  return {
    tour: () => create(`${prefix}_tour`),
    page: (n) => create(`${prefix}_p${n}`, `${prefix}_tour`),
    async close() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const name of made.reverse()) await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

// The two stores at once: each run mostly waits (servers starting, shells), on ports of its own.
describe('the docs run', { concurrency: 2 }, () => {
  // Built once before both: two `npm start`s building the stale bundle at once would race on dist/main.js.
  before(() => { execFileSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, stdio: 'ignore' }); });
  for (const kind of ['sqlite', 'postgres'] as const) {
    test(`the README's tour runs as written, then each page of docs/ on its own after it [${kind}]`, {
      // The tour and eleven pages, each restarting a server: about two minutes on a quiet machine, several
      // times that on a loaded one; the bound only keeps a hung shell from holding the run forever.
      timeout: 900_000,
      // As the store suites do: skipped with the reason, except in CI, where it must run.
      skip: kind === 'postgres' && !postgresUrl && process.env.CI !== 'true' ? 'LATCHKEY_TEST_POSTGRES_URL is not set' : false,
    }, async (t) => {
      if (kind === 'postgres' && !postgresUrl) throw new Error('CI must run the PostgreSQL docs run: set LATCHKEY_TEST_POSTGRES_URL');
      const store = kind === 'sqlite' ? sqliteDocsStore : postgresDocsStore(postgresUrl!);
      t.after(() => store.close());
      const tourEnv = await store.tour();
      const dir = mkdtempSync(join(tmpdir(), 'latchkey-docs-'));
      const env: NodeJS.ProcessEnv = {};
      for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('LATCHKEY_')) env[key] = value;
      Object.assign(env, {
        TMPDIR: dir,
        LATCHKEY_IDENTITY_PORT: String(await freePort()),
        LATCHKEY_SITE_PORT: String(await freePort()),
        LATCHKEY_MANAGEMENT_PORT: String(await freePort()),
        LATCHKEY_LOG_LEVEL: 'info',
        NO_COLOR: '1',
        ...tourEnv,
      });
      t.after(() => rmSync(dir, { recursive: true, force: true }));

      // The tour, in its own shell; then its server is stopped and its state kept for every page.
      const tourShell = new Session(dir, env);
      let tour: Tour;
      try {
        await tourShell.run(`set -o pipefail; compgen -v | sort > ${dir}/vars.before`);
        await runDocument(tourShell, dir, 'README.md');
        tour = { vars: join(dir, 'tour.vars'), funcs: join(dir, 'tour.funcs'), snapshot: join(dir, 'tour-snapshot'), dataDir: '' };
        const saved = await tourShell.run([
          // The variables the tour set (not bash's own), and its functions.
          `declare -p $(comm -13 ${dir}/vars.before <(compgen -v | sort) | grep -v '^_$') > ${tour.vars}`,
          `declare -f > ${tour.funcs}`,
          'kill -TERM $SERVER && wait $SERVER',
          `cp -a "$LATCHKEY_DATA_DIR" ${tour.snapshot}`,
          'echo "$LATCHKEY_DATA_DIR"',
        ].join('\n'));
        assert.equal(saved.status, 0, `saving the tour's state: ${saved.stderr}`);
        tour.dataDir = saved.stdout.trim();
      } finally {
        await tourShell.close();
      }

      let page = 0;
      for (const document of DOCUMENTS.filter((d) => d !== 'README.md')) {
        if (steps(document, readFileSync(join(ROOT, document), 'utf8')).length === 0) continue;
        const pageEnv = { ...env, ...await store.page(++page) };
        await t.test(document, async () => {
          // A fresh shell with what the tour left: its variables and functions, its data, its server running.
          const session = new Session(dir, pageEnv);
          try {
            const start = await session.run([
              'set -o pipefail',
              `source ${tour.vars}; source ${tour.funcs}`,
              `rm -rf "${tour.dataDir}" && cp -a ${tour.snapshot} "${tour.dataDir}"`,
              // A log of this server's own (operations.md waits for its "stopped").
              'mv "$LATCHKEY_DATA_DIR/server.log" "$LATCHKEY_DATA_DIR/server.tour.log"',
              'node dist/main.js > "$LATCHKEY_DATA_DIR/server.log" 2>&1 &',
              'SERVER=$!',
              'for i in $(seq 300); do curl -sf "$SITE/readyz" > /dev/null && break; kill -0 $SERVER || break; sleep 0.2; done',
              'kill -0 $SERVER && curl -sf "$SITE/readyz" > /dev/null',
            ].join('\n'));
            assert.equal(start.status, 0, `restarting the tour's server for ${document}: ${start.stderr}`);
            await runDocument(session, dir, document);
          } finally {
            // Its server stops before the next page starts one on the same ports.
            await session.run('kill -TERM $SERVER 2> /dev/null; wait $SERVER 2> /dev/null; true');
            await session.close();
          }
        });
      }
    });
  }});


test('the documents stand alone', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 250, `README.md has ${readme.split('\n').length} lines`);
  for (const document of DOCUMENTS) {
    const text = readFileSync(join(ROOT, document), 'utf8');
    // Papers outside the repository and the words of the team's own process.
    for (const word of [/DESIGN\.md/, /STYLE\.md/, /\bspec(ification)?s?\b/i, /\bissues? \d/i, /\b(first|second|third|fourth|fifth|sixth|this|last|previous|next) session\b/i]) {
      const line = text.split('\n').findIndex((l) => word.test(l));
      assert.equal(line, -1, `${document}:${line + 1} mentions ${word}: ${text.split('\n')[line]}`);
    }
    // TMPDIR is often unset (Debian): a run block uses mktemp, or ${TMPDIR:-/tmp}.
    for (const { block } of steps(document, text)) {
      assert.doesNotMatch(block.code, /\$(TMPDIR\b|\{TMPDIR\})/, `${block.file}:${block.line} uses $TMPDIR, which is often unset`);
    }
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      assert.ok(existsSync(resolve(ROOT, dirname(document), target)), `${document} links to ${target}, which does not exist`);
    }
  }
});

test('the output convention: wildcards and JSON sequences', () => {
  assert.equal(mismatch(jsonValues('{"a": "…", "b": [1, "x…"]}')[0], { a: 42, b: [1, 'xyz'] }), undefined);
  assert.match(String(mismatch({ a: 1 }, { a: 1, b: 2 })), /keys not shown/);
  assert.equal(mismatch({ a: 1, [WILDCARD]: WILDCARD }, { a: 1, b: 2 }), undefined);
  assert.deepEqual(jsonValues('{"a":1}{"b":"}"}\n"c" 3'), [{ a: 1 }, { b: '}' }, 'c', 3]);
  assert.equal(compare({ file: '', line: 1, info: ['text'], code: 'id …\nok' }, 'id 7\nok\n'), undefined);
  // A placeholder is a value: not null, not empty, not missing.
  assert.match(String(mismatch(jsonValues('{"a": "…"}')[0], { a: null })), /expected a value, got null/);
  assert.match(String(mismatch(jsonValues('{"a": "…"}')[0], { a: '' })), /expected a value, got ""/);
  assert.match(String(mismatch(jsonValues('{"a": "…"}')[0], {})), /missing/);
  assert.match(String(mismatch('x…', 'x')), /expected "x…", got "x"/);
  assert.match(String(compare({ file: '', line: 1, info: ['text'], code: 'id …' }, 'id \n')), /line 1/);
});
