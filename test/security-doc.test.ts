/**
 * SECURITY.md names the tests that verify each requirement: every test file it names must exist,
 * and every test name it quotes after a file must appear in that file.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const doc = readFileSync(new URL('../SECURITY.md', import.meta.url), 'utf8');
/** A test reference: `test/…/x.test.ts` followed by zero or more "quoted test names". */
const REFERENCE = /`(test\/[^`\s]+\.test\.ts)`((?: "[^"]+")*)/g;

test('every test file named in SECURITY.md exists and contains every test name quoted after it', () => {
  const references = [...doc.matchAll(REFERENCE)];
  assert.ok(references.length >= 100, `${references.length} references`);
  const problems: string[] = [];
  for (const [, file, quoted] of references) {
    const path = new URL(`../${file}`, import.meta.url);
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

test('every row of the requirement tables that claims to be met names a test or says why none is needed', () => {
  const rows = doc.split('\n').filter((line) => /^\| V\d+\.\d+\.\d+ \|/.test(line));
  assert.ok(rows.length >= 250, `${rows.length} rows`);
  for (const row of rows) {
    const cells = row.split(' | ');
    assert.equal(cells.length, 6, row);
    assert.ok(cells[5].trim().replace(/\|$/, '').trim().length > 0, row);
  }
});
