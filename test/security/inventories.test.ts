/**
 * The inventories SECURITY.md and docs/operations.md promise (ASVS V11.1, V13.1, V13.2, V16.1) are read
 * against the source: an algorithm, an outbound client or a log destination added to src/ without its line
 * in the documents makes these tests fail.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/paths.ts';

const security = readFileSync(join(ROOT, 'SECURITY.md'), 'utf8');
const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');

/** Every .ts file under src/, as [path relative to the repository, text]. */
function sources(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) out.push([relative(ROOT, path), readFileSync(path, 'utf8')]);
    }
  };
  walk(join(ROOT, 'src'));
  assert.ok(out.length > 50, `${out.length} source files`);
  return out;
}

/** The text of a `## title` section of a Markdown document, up to the next `## `. */
function section(doc: string, title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `no "## ${title}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

const NODE_HASH: Record<string, string> = { sha1: 'SHA-1', sha256: 'SHA-256', sha384: 'SHA-384', sha512: 'SHA-512', md5: 'MD5' };

/**
 * The name the inventory must use for each algorithm the code asks for: node:crypto calls with a literal
 * algorithm, JOSE algorithm identifiers, and the password hashing libraries.
 */
function algorithmsUsed(): Map<string, Set<string>> {
  const used = new Map<string, Set<string>>();
  const add = (name: string, file: string) => used.set(name, (used.get(name) ?? new Set()).add(file));
  for (const [file, text] of sources()) {
    for (const [, fn, alg] of text.matchAll(/\b(createCipheriv|createDecipheriv|createHash|createHmac|hash|hkdfSync|pbkdf2Sync|pbkdf2|scryptSync|scrypt)\('([a-z0-9-]+)'/g)) {
      if (fn === 'createCipheriv' || fn === 'createDecipheriv') add(alg.toUpperCase(), file);
      else if (fn === 'createHmac') add(`HMAC-${NODE_HASH[alg] ?? alg}`, file);
      else if (fn === 'hkdfSync') add('HKDF', file);
      else if (fn.startsWith('pbkdf2')) add('PBKDF2', file);
      else if (fn.startsWith('scrypt')) add('scrypt', file);
      else add(NODE_HASH[alg] ?? alg, file);
    }
    for (const [, alg] of text.matchAll(/'((?:HS|RS|PS|ES)(?:256|384|512)|EdDSA|Ed25519|Ed448)'/g)) add(alg, file);
    if (/from 'argon2'/.test(text)) add('argon2id', file);
    if (/from 'bcryptjs'/.test(text)) add('bcrypt', file);
  }
  return used;
}

test('every algorithm the source uses is named in SECURITY.md\'s cryptography inventory', () => {
  const inventory = section(security, 'Cryptography inventory');
  const used = algorithmsUsed();
  // The scan finds what the inventory's main rows are about; if it found nothing it would prove nothing.
  for (const name of ['AES-256-GCM', 'SHA-256', 'SHA-512', 'HMAC-SHA-256', 'HS256', 'RS256', 'argon2id', 'bcrypt']) {
    assert.ok(used.has(name), `the scan no longer finds ${name} in src/`);
  }
  const missing = [...used.keys()].filter((name) => !new RegExp(`(?<![A-Za-z0-9-])${name}(?![0-9])`).test(inventory)).sort();
  assert.deepEqual(
    missing.map((name) => `${name} (${[...used.get(name)!].join(', ')})`),
    [],
    'an algorithm is used without an inventory row: add it to SECURITY.md',
  );
});

test('every source file the cryptography inventory points at exists', () => {
  const inventory = section(security, 'Cryptography inventory');
  const paths = [...inventory.matchAll(/\b(src\/[\w./-]+)/g)].map(([, path]) => path.replace(/[.,]$/, ''));
  assert.ok(paths.length >= 5, `${paths.length} paths`);
  const files = new Set(sources().map(([file]) => file));
  for (const path of paths) {
    assert.ok(files.has(path) || [...files].some((file) => file.startsWith(`${path}/`)), `${path} is not in src/`);
  }
});

/**
 * Each module that can open a connection, the destination it reaches, and the setting that names that
 * destination (which docs/operations.md must document).
 */
const OUTBOUND: Array<{ pattern: RegExp; destination: string; settings: string[] }> = [
  { pattern: /from 'pg'/, destination: 'PostgreSQL', settings: ['LATCHKEY_DATABASE_URL'] },
  { pattern: /from 'node:net'/, destination: 'PostgreSQL (the change feed\'s liveness socket)', settings: ['LATCHKEY_DATABASE_URL'] },
  { pattern: /from 'ioredis'/, destination: 'Redis', settings: ['LATCHKEY_REDIS_URL'] },
  { pattern: /from 'nodemailer'/, destination: 'SMTP', settings: ['LATCHKEY_SMTP_URL'] },
  {
    pattern: /import \{[^}]*\brequest as https?Request\b[^}]*\} from 'node:https?'/,
    destination: 'the customers\' webhook endpoints',
    settings: ['LATCHKEY_WEBHOOKS_ALLOW_HTTP', 'LATCHKEY_WEBHOOKS_ALLOW_PRIVATE'],
  },
  {
    pattern: /\?\? fetch\b|(?<![\w.])fetch\(|createRemoteJWKSet/,
    destination: 'the site\'s OpenID provider',
    settings: ['LATCHKEY_SITE_PROVIDER_ISSUER', 'LATCHKEY_SITE_PROVIDER_INTROSPECTION_URL', 'LATCHKEY_SITE_PROVIDER_USERINFO_URL'],
  },
];
/** Modules that could reach anywhere; none may appear in src/ without a line above. */
const NETWORK = /from '(pg|ioredis|nodemailer|node:net|net|node:tls|tls|node:https|https|node:dgram|dgram|undici|node-fetch|axios|got)'|import \{[^}]*\brequest\b[^}]*\} from '(node:)?https?'|\?\? fetch\b|(?<![\w.])fetch\(|createRemoteJWKSet|\bhttp\.(request|get)\(/;

test('outbound connections: only to the database, Redis, SMTP and the site\'s provider, each documented with its setting', () => {
  const reaching = new Map<string, string[]>();
  for (const [file, text] of sources()) {
    // Comments out; a parameter named fetch (group pages: fetch(offset, limit)) is not the global one.
    const uncommented = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const localFetch = /[(,]\s*fetch\s*:|\b(const|let|function)\s+fetch\b/.test(uncommented);
    const code = localFetch ? uncommented.replace(/(?<![\w.])fetch\(/g, 'localFetch(') : uncommented;
    if (!NETWORK.test(code)) continue;
    const destinations = OUTBOUND.filter(({ pattern }) => pattern.test(code)).map(({ destination }) => destination);
    reaching.set(file, destinations);
  }
  const unexplained = [...reaching].filter(([, destinations]) => destinations.length === 0).map(([file]) => file);
  assert.deepEqual(unexplained, [], 'a source file can open a connection that is not one of the documented destinations');
  const found = new Set([...reaching.values()].flat());
  for (const { destination, settings } of OUTBOUND) {
    assert.ok(found.has(destination), `no source file reaches ${destination} any more: update this test and the documents`);
    for (const setting of settings) {
      assert.match(operations, new RegExp(`\\| \`${setting}\` \\|`), `docs/operations.md documents ${setting}`);
    }
  }
  // The operator's document has a section on each shared dependency.
  for (const heading of ['## PostgreSQL', '## Redis', '## Mail']) assert.ok(operations.includes(`\n${heading}\n`), heading);
});

test('the logging inventory: pino JSON on stdout, and every stderr line the server writes is one the documents describe', () => {
  const logging = section(security, 'Logging');
  assert.match(logging, /One JSON object per line on stdout \(pino\)/);
  const lines: string[] = [];
  for (const [file, text] of sources()) {
    // The CLI talks to its user on stderr; the inventory is about the server.
    if (file.startsWith('src/cli/')) continue;
    assert.doesNotMatch(text, /\bconsole\.(log|info|warn|error|debug)\(/, `${file} writes through console.*, outside the inventory`);
    // pino.destination({ dest: 1 }) is stdout (file descriptor 1); any other destination or transport is not.
    assert.doesNotMatch(text, /pino\.destination\((?!\{ dest: 1[,}]|1\))|pino\.transport|createWriteStream\([^)]*log/i, `${file} sends logs elsewhere than stdout`);
    if (!text.includes('process.stderr.write(')) continue;
    for (const [, message] of text.matchAll(/[`'"]latchkey: ([^`'"$]*)/g)) lines.push(`${file}: ${message.trim()}`);
  }
  assert.ok(lines.length >= 3, lines.join('\n'));
  const documents = `${security}\n${operations}`;
  // A line is documented when its fixed wording is in SECURITY.md or docs/operations.md.
  const undocumented = lines
    .map((line) => line.slice(line.indexOf(': ') + 2).replace(/\\n$/, '').replace(/[:(].*$/, '').trim())
    .filter((wording) => wording !== '' && !documents.includes(wording));
  assert.deepEqual(undocumented.sort(), [], 'a stderr line the server writes is in neither SECURITY.md nor docs/operations.md: document it');
});
