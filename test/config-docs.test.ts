/**
 * docs/operations.md lists every setting src/config.ts reads, each in its own row of the configuration
 * table, and for the numbers and switches with the default and range config.ts parses them with. A
 * variable added to config.ts without its row, or a default or range changed on one side only, fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/paths.ts';

const source = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');

/** `30 * 24 * 3600`, `60_000`: the constant expressions config.ts writes its bounds with. */
const evaluate = (expression: string): number => {
  assert.match(expression.trim(), /^[\d_]+( \* [\d_]+)*$/, `unexpected bound ${expression} in src/config.ts`);
  return expression.split('*').map((n) => Number(n.trim().replaceAll('_', ''))).reduce((a, b) => a * b, 1);
};

/** The cells of the configuration table's row for `name` (Variable | Default | Range | Meaning). */
function row(name: string): string[] | undefined {
  const line = operations.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
  return line?.split('|').slice(1, -1).map((cell) => cell.trim());
}

test('every LATCHKEY_* variable config.ts reads has its own row in docs/operations.md', () => {
  const names = [...new Set([...source.matchAll(/'(LATCHKEY_[A-Z0-9_]+)'/g)].map((m) => m[1]))];
  assert.ok(names.length > 40, `found only ${names.length} variables in src/config.ts`);
  const missing = names.filter((name) => row(name) === undefined);
  assert.deepEqual(missing, [], `docs/operations.md has no "| \`NAME\` |" row for: ${missing.join(', ')}`);
});

test('numbers: the documented default and range are the ones config.ts parses', () => {
  const ints = [...source.matchAll(/int\('(LATCHKEY_[A-Z0-9_]+)', ([^,]+), ([^,]+), ([^)]+)\)/g)];
  assert.ok(ints.length >= 19, `found only ${ints.length} integer settings`);
  for (const [, name, fallback, min, max] of ints) {
    const [, defaultCell, rangeCell] = row(name) ?? [];
    assert.match(defaultCell ?? '', new RegExp(`\`${evaluate(fallback)}\``), `${name}: default ${evaluate(fallback)} not in "${defaultCell}"`);
    assert.equal(rangeCell, `${evaluate(min)}..${evaluate(max)}`, `${name}: range`);
  }
});

test('switches and rate limits: the documented default is the one config.ts parses', () => {
  for (const [, name, fallback] of source.matchAll(/bool\('(LATCHKEY_[A-Z0-9_]+)', (true|false)\)/g)) {
    const [, defaultCell, rangeCell] = row(name) ?? [];
    assert.equal(defaultCell, `\`${fallback}\``, `${name}: default`);
    assert.match(rangeCell ?? '', /true.*false/, `${name}: values`);
  }
  for (const [, name, fallback] of source.matchAll(/rate\('(LATCHKEY_[A-Z0-9_]+)', '([^']*)'\)/g)) {
    const [, defaultCell] = row(name) ?? [];
    assert.match(defaultCell ?? '', new RegExp(`^\`${fallback}\``), `${name}: default`);
  }
});
