/**
 * SECURITY.md names the tests that verify each requirement: every test file it names must exist,
 * and every test name it quotes after a file must appear in that file.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/paths.ts';

const doc = readFileSync(join(ROOT, 'SECURITY.md'), 'utf8');
/** A test reference: `test/…/x.test.ts` followed by zero or more "quoted test names". */
const REFERENCE = /`(test\/[^`\s]+\.test\.ts)`((?: "[^"]+")*)/g;

test('every test file named in SECURITY.md exists and contains every test name quoted after it', () => {
  const references = [...doc.matchAll(REFERENCE)];
  assert.ok(references.length >= 100, `${references.length} references`);
  const problems: string[] = [];
  for (const [, file, quoted] of references) {
    const path = join(ROOT, file);
    if (!existsSync(path)) {
      problems.push(`${file} does not exist`);
      continue;
    }
    const source = readFileSync(path, 'utf8');
    for (const [, name] of quoted.matchAll(/ "([^"]+)"/g)) {
      if (!source.includes(name)) problems.push(`${file} has no test named "${name}"`);
    }
  }
  assert.deepEqual([...new Set(problems)], []);
});

/**
 * Rows that claim to be met (wholly or in part) but that no test can observe, each with the reason. Every
 * other Met, Partly or "Met when https" row must name a test.
 */
const UNTESTABLE: Record<string, string> = {
  'V11.4.4': 'no key is derived from a password (keys come from the random master key); a fact of absence',
};

test('every row that claims to be met, wholly or in part, names at least one test (or is in UNTESTABLE with the reason)', () => {
  const rows = doc.split('\n').filter((line) => /^\| V\d+\.\d+\.\d+ \|/.test(line));
  const claimed = rows.map((row) => row.split(' | ')).filter((cells) => /^(Met|Partly|Met when https)$/.test(cells[3]!.trim()));
  assert.ok(claimed.length >= 150, `${claimed.length} rows claim to be met`);
  const untested = claimed
    .filter((cells) => ![...cells[5]!.matchAll(REFERENCE)].length)
    .map((cells) => cells[0]!.replace(/^\| /, '').trim());
  assert.deepEqual(untested.filter((id) => !(id in UNTESTABLE)), [], 'rows that claim to be met without naming a test');
  assert.deepEqual(Object.keys(UNTESTABLE).filter((id) => !untested.includes(id)), [], 'UNTESTABLE lists a row that now names a test, or no longer claims to be met');
});

test('every row of the requirement tables that claims to be met names a test or says why none is needed', () => {
  const rows = doc.split('\n').filter((line) => /^\| V\d+\.\d+\.\d+ \|/.test(line));
  assert.ok(rows.length >= 250, `${rows.length} rows`);
  for (const row of rows) {
    const cells = row.split(' | ');
    assert.equal(cells.length, 6, row);
    assert.ok(cells[5].trim().replace(/\|$/, '').trim().length > 0, row);
  }
});
