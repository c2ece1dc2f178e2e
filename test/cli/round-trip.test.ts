/**
 * The export → import round trip is lossless (DESIGN "One set of rules for every way in"): every kind of
 * user each face can create (admin API, console, import) is exported with `users export`, imported with
 * `users import` into another customer, and exports the same, on CSV and JSON lines, on both stores.
 * Cells that a spreadsheet would run as formulas are neutralised in the CSV and restored by import.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { parse } from 'csv-parse/sync';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs } from '../../src/cli/args.ts';
import { usersExport } from '../../src/cli/commands/users-export.ts';
import { usersImport } from '../../src/cli/commands/users-import.ts';
import { neutraliseFormula, restoreFormula } from '../../src/identity/users/csv-formulas.ts';
import { createUserExportService } from '../../src/identity/users/export.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

const PASSWORD = 'violet-otter-harbour-42';
const BCRYPT = '$2b$04$RNOl9FiKwY6v0mU9FGBrrehBHWaYB79PS0MIhTwJP5RCMD0JsSGfe';
const FORMULA_START = /^[=+\-@\t\r]/;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-round-trip-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function snapshot(built: TestApp, customerId: number) {
  const records = [];
  const exporter = createUserExportService({ db: built.composition.store.db, groups: built.composition.services.groups });
  for await (const record of exporter.exportUsers(customerId, { includePasswordHashes: true })) records.push(record);
  return records;
}

/** Every kind of user the admin API, the console and import can create, in one customer. */
async function createEveryKind(built: TestApp): Promise<void> {
  const ck = built.customer.customerKey;
  const customerId = built.customer.customerId;
  const { users } = built.composition.services;
  const api = async (path: string, body: Record<string, unknown>) => {
    const response = await built.admin.post(path, { customerKey: ck, ...body });
    assert.equal(response.statusCode, 200, response.body);
  };
  await api('/admin/groups/update', { groups: [{ groupName: '=Team, "A"', isDefault: 'false', groupAttribute1: 'x' }, { groupName: '-ops', isDefault: 'false' }] });

  // Admin API: every field; formula-like values in every column; a password; memberships with attributes.
  await api('/admin/users/create', {
    username: '=cmd|calc', email: 'full@example.test', firstName: '+Rae, "R"', lastName: '-Line', phone: '+1 (555) 010',
    alternateEmail: '-alt@example.test', password: PASSWORD,
    groups: [{ name: '=Team, "A"' }, { name: '-ops' }],
    customAttribute1: '@SUM(A1)', customAttribute2: "'=already quoted", customAttribute3: "'plain quote", customAttribute4: "''=two quotes",
    customAttribute5: "'", customAttribute50: 'fifty',
  });
  // Admin API: empty names (users/create takes ""), and a username that is its e-mail with no e-mail field.
  await api('/admin/users/create', { username: 'empty@example.test', firstName: '', lastName: '' });
  await api('/admin/users/create', { username: 'a', email: 'one-letter@example.test', firstName: 'Zoë 🦊', lastName: 'Ñandú' });
  // Admin API: an attribute cleared with "" is gone; the user left in no group but the default one.
  await api('/admin/users/create', { username: 'cleared', email: 'cleared@example.test', firstName: 'C', lastName: 'L', customAttribute9: 'nine' });
  await api('/admin/users/update', { username: 'cleared', customAttribute9: '', groups: [{ name: 'DEFAULT' }] });

  // Console: the create form's mapping (empty e-mail is none: the username serves; empty names), then the edit form.
  await users.create(customerId, { username: 'console@example.test', email: undefined, firstName: '', lastName: '', customAttributes: {} }, SYSTEM);
  await users.create(customerId, { username: 'edited', email: 'edited@example.test', firstName: 'Ed', lastName: '', password: PASSWORD, customAttributes: {} }, SYSTEM);
  await users.update(customerId, {
    username: 'edited', email: 'edited@example.test', firstName: 'Ed', lastName: '', phone: '-0', alternateEmail: '',
    customAttributes: { customAttribute7: '=HYPERLINK("http://x")' },
  }, SYSTEM);

  // Import: imported hashes, a user with only a username and an e-mail (empty name cells).
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-round-trip-src-'));
  const file = join(dir, 'users.jsonl');
  writeFileSync(file, [
    { username: 'hashed', email: 'hashed@example.test', firstName: 'H', lastName: 'B', passwordHash: BCRYPT, groups: ['-ops'] },
    { username: 'bare', email: 'bare@example.test' },
  ].map((r) => JSON.stringify(r)).join('\n'));
  const imported = await usersImport.run(parseArgs(['users', 'import', file, '--customer-key', ck, '--json']), { app: built.composition, auditContext: SYSTEM });
  rmSync(dir, { recursive: true, force: true });
  assert.deepStrictEqual(imported.json, { created: 2, updated: 0, unchanged: 0, failed: 0, errors: [] });
}

test('formula neutralisation is undone exactly, whatever the value starts with', () => {
  for (const value of ['', "'", "''", "'x", "''x", "'=", "''=", '=1', '+1', '-1', '@a', '\tx', '\rx', "'\t", 'plain', 'a=b', "O'Neil"]) {
    assert.equal(restoreFormula(neutraliseFormula(value)), value, JSON.stringify(value));
    assert.doesNotMatch(neutraliseFormula(value), FORMULA_START, JSON.stringify(value));
  }
  assert.equal(neutraliseFormula('=1+2'), "'=1+2");
  assert.equal(neutraliseFormula("'=1"), "''=1");
  assert.equal(neutraliseFormula("'plain"), "'plain", 'a quote before anything else is left as it is');
  assert.equal(restoreFormula("'plain"), "'plain", 'a hand-written leading quote is kept');
});

describeEachStore('export → import round trip', (kind) => {
  test('every kind of user each face can create survives export → import into another customer (CSV and JSON lines)', async (t) => {
    const built = await build(t, kind);
    await createEveryKind(built);
    const original = await snapshot(built, built.customer.customerId);
    assert.equal(original.length, 8);
    const dir = tempDir(t);
    for (const format of ['csv', 'jsonl'] as const) {
      const out = join(dir, `users.${format}`);
      const exported = await usersExport.run(parseArgs(['users', 'export', '--customer-key', built.customer.customerKey, '--out', out,
        '--include-password-hashes', '--json']), { app: built.composition, auditContext: SYSTEM });
      assert.deepStrictEqual(exported.json, { exported: 8, out });
      if (format === 'csv') {
        // No cell a spreadsheet would run: each starts otherwise, the quote export put there included.
        const cells = (parse(readFileSync(out, 'utf8'), { relax_column_count: false }) as string[][]).flat();
        for (const cell of cells) assert.doesNotMatch(cell, FORMULA_START, cell);
        assert.ok(cells.includes("'=cmd|calc") && cells.includes("''=already quoted") && cells.includes("'plain quote"));
      }
      const other = await built.newCustomer();
      const result = await usersImport.run(parseArgs(['users', 'import', out, '--customer-key', other.customer.customerKey, '--json']), { app: built.composition, auditContext: SYSTEM });
      assert.deepStrictEqual(result.json, { created: 8, updated: 0, unchanged: 0, failed: 0, errors: [] });
      assert.deepStrictEqual(await snapshot(built, other.customer.customerId), original, format);
      // Imported again, nothing changes: the file reads back as what is stored.
      const again = await usersImport.run(parseArgs(['users', 'import', out, '--customer-key', other.customer.customerKey, '--json']), { app: built.composition, auditContext: SYSTEM });
      assert.deepStrictEqual(again.json, { created: 0, updated: 0, unchanged: 8, failed: 0, errors: [] }, format);
    }
  });
});
