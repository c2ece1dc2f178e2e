/**
 * What production runs, as `npm start` runs it (the start script on a bundle built for this file; the
 * working directory a fresh empty one): the bundle holds only src/ and runtime dependencies (ASVS V15.2.3),
 * neither face serves a file or a directory listing, .git included (V13.4.1, V13.4.3), and the process
 * writes its logs to stdout as JSON lines and nowhere else on disk (V16.2.3).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { ROOT } from '../helpers/paths.ts';

// A safety net against a hung child, not an assertion about speed.
const LIMIT_MS = 120_000;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: { start: string }; dependencies: Record<string, string>; devDependencies?: Record<string, string>;
};
const BUNDLE = `dist/security-test-${process.pid}.js`;
const built = spawnSync(process.execPath, ['scripts/build.mjs', 'src/main.ts', BUNDLE], { cwd: ROOT, encoding: 'utf8' });
assert.equal(built.status, 0, built.stderr);
after(() => rmSync(join(ROOT, BUNDLE), { force: true }));

test('the production bundle is built from src/ only and imports runtime dependencies only (no test, bench or dev code)', () => {
  const bundle = readFileSync(join(ROOT, BUNDLE), 'utf8');
  // esbuild marks each module it inlines with a "// <path>" line.
  const modules = [...bundle.matchAll(/^\/\/ ([\w@./-]+\.(?:ts|js|mjs|json))$/gm)].map(([, path]) => path);
  assert.ok(modules.includes('src/main.ts') && modules.length > 50, `${modules.length} modules`);
  assert.deepEqual(modules.filter((path) => !path.startsWith('src/')), [], 'every inlined module is under src/');
  assert.doesNotMatch(bundle, /\b(test\/helpers|bench\/|node:test|playwright|smtp-sink)\b/);

  const packages = new Set([...bundle.matchAll(/^import .*? from "([^"]+)";$|^import "([^"]+)";$/gm)]
    .map(([, a, b]) => (a ?? b)!)
    .filter((name) => !name.startsWith('node:'))
    .map((name) => (name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]!)));
  assert.ok(packages.has('fastify') && packages.size > 10, [...packages].join(', '));
  const runtime = new Set(Object.keys(pkg.dependencies));
  assert.deepEqual([...packages].filter((name) => !runtime.has(name)), [],
    'the server imports a package that is not in "dependencies" (a production install without dev dependencies would lack it)');
});

/** GET with the path sent byte for byte (fetch would resolve "../" before sending). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, method: 'GET', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk; });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

/** Paths a static file server would answer; none is a route of either face. */
const FILE_PATHS = [
  '/.git/config', '/.git/HEAD', '/.svn/entries', '/.env', '/package.json', '/package-lock.json', '/dist/main.js',
  '/src/main.ts', '/node_modules/fastify/package.json', '/master.key', '/latchkey.sqlite', '/outbox/',
  '/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2f..%2fpackage.json',
  '/api/docs/static/../../../../package.json', '/api/docs/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/package.json',
  '/cms-json/../package.json', '/../../../../etc/passwd',
];
/** Directories that exist behind routes: a listing would show their files. */
const DIRECTORY_PATHS = ['/', '/console/', '/api/', '/api/docs/static/', '/cms-json/', '/rest/api/2/', '/customers/'];

test('npm start: neither face serves a file or a directory listing (.git, sources, package files, data dir); logs are JSON lines on stdout only', { timeout: LIMIT_MS }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'latchkey-security-data-'));
  const cwd = mkdtempSync(join(tmpdir(), 'latchkey-security-cwd-'));
  t.after(() => { rmSync(dataDir, { recursive: true, force: true }); rmSync(cwd, { recursive: true, force: true }); });
  const [identityPort, sitePort, managementPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('LATCHKEY_'))),
    LATCHKEY_DATA_DIR: dataDir,
    LATCHKEY_HOST: '127.0.0.1',
    LATCHKEY_IDENTITY_PORT: String(identityPort),
    LATCHKEY_SITE_PORT: String(sitePort),
    LATCHKEY_MANAGEMENT_PORT: String(managementPort),
    LATCHKEY_LOG_LEVEL: 'debug',
  };
  const start = pkg.scripts.start.replace('dist/main.js', join(ROOT, BUNDLE));
  const child = spawn('sh', ['-c', /^exec\s/.test(start) ? start : `exec ${start}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk; });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if ((out.match(/Server listening at/g) ?? []).length >= 3) resolve();
    });
    void exited.then((code) => reject(new Error(`server exited (${code})\nstdout:\n${out}\nstderr:\n${err}`)));
  });

  const identity = `http://127.0.0.1:${identityPort}`;
  const site = `http://127.0.0.1:${sitePort}`;
  const masterKey = readFileSync(join(dataDir, 'master.key'), 'utf8').trim();
  const secrets = ['[core]', 'ref: refs/', '"devDependencies"', '"lockfileVersion"', 'SQLite format 3', 'root:x:0:0', masterKey];
  for (const base of [identity, site]) {
    for (const path of FILE_PATHS) {
      const { status, body } = await rawGet(base, path);
      assert.ok([400, 403, 404].includes(status), `${base}${path} answered ${status}`);
      for (const secret of secrets) assert.ok(!body.includes(secret), `${base}${path} shows ${secret}`);
    }
    for (const path of DIRECTORY_PATHS) {
      const { status, body } = await rawGet(base, path);
      assert.ok(status < 500, `${base}${path} answered ${status}`);
      assert.doesNotMatch(body, /Index of|Directory listing|<a href="[^"]*\.(js|css|map|json|png)">/i, `${base}${path} lists files`);
    }
  }

  child.kill('SIGTERM');
  assert.equal(await exited, 0, err);

  // stdout: the first-run banner (printed once, to the terminal), then one JSON object per line.
  const lines = out.split('\n').filter((line) => line !== '');
  const banner = /^(Latchkey: created the first customer|  Customer (ID|key):|  API key:|Console: http|Set the console password of|  http:\/\/\S+\/console\/first-sign-in\/)/;
  const logLines = lines.filter((line) => !banner.test(line));
  assert.equal(lines.length - logLines.length, 7, 'the banner is seven lines: the keys, the console\'s address and its one-time link');
  assert.ok(logLines.length >= (FILE_PATHS.length + DIRECTORY_PATHS.length) * 2, `${logLines.length} log lines`);
  for (const line of logLines) {
    const entry = JSON.parse(line) as Record<string, unknown>;
    assert.equal(typeof entry.level, 'number', line);
    assert.equal(typeof entry.time, 'number', line);
  }
  // Nothing else: no log file in the working directory or the data directory.
  assert.deepEqual(readdirSync(cwd), [], 'the server wrote nothing to its working directory');
  const written = readdirSync(dataDir, { recursive: true }).map(String);
  assert.deepEqual(written.filter((name) => /log/i.test(name) && !/\.sqlite(-wal|-shm)?$/.test(name)), [], written.join(', '));
  assert.ok(existsSync(join(dataDir, 'latchkey.sqlite')));
});
