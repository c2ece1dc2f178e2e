/**
 * `users import` and `users export` in process on both stores (the commands call the same services as
 * the routes): counts and error lines, every kind of bad row, updates matched case-insensitively, a second
 * run that changes nothing, an import stopped after some batches and run again, and the round trip.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs } from '../../src/cli/args.ts';
import { usersExport } from '../../src/cli/commands/users-export.ts';
import { usersImport } from '../../src/cli/commands/users-import.ts';
import { createUserExportService } from '../../src/identity/users/export.ts';
import { createUserImportService } from '../../src/identity/users/import.ts';
import { checkColumns } from '../../src/identity/users/import-row.ts';
import { readCsv } from '../../src/identity/users/import-rows.ts';
import { hashPassword, verifyPassword } from '../../src/lib/passwords.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { createReadStream } from 'node:fs';

if (postgresUrl) await postgresStore();

const PASSWORD = 'violet-otter-harbour-42';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-import-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function runImport(built: TestApp, file: string, ...extra: string[]) {
  const result = await usersImport.run(parseArgs(['users', 'import', file, '--customer-key', built.customer.customerKey, '--json', ...extra]), { app: built.composition, auditContext: SYSTEM });
  return { exitCode: result.exitCode ?? 0, summary: result.json };
}

/** Every user of the customer as export records (hashes included), through the export service. */
async function snapshot(built: TestApp, customerId = built.customer.customerId) {
  const records = [];
  const exporter = createUserExportService({ db: built.composition.store.db, groups: built.composition.services.groups });
  for await (const record of exporter.exportUsers(customerId, { includePasswordHashes: true })) records.push(record);
  return records;
}

describeEachStore('users import and export', (kind) => {
  test('counts, and each bad row reported on the line its record starts, none aborting the file', async (t) => {
    const built = await build(t, kind);
    const dir = tempDir(t);
    const bcrypt = '$2b$04$RNOl9FiKwY6v0mU9FGBrrehBHWaYB79PS0MIhTwJP5RCMD0JsSGfe';
    await built.composition.services.users.create(built.customer.customerId, {
      username: 'zed', email: 'zed@example.test', firstName: 'Zed', lastName: 'Z', customAttributes: {},
    }, SYSTEM);
    const file = join(dir, 'users.csv');
    writeFileSync(file, [
      'username,email,firstName,lastName,phone,groups,password,passwordHash,customAttribute7',
      `alice,alice@example.test,"Alice`,
      `Anne",Archer,+44 20 7946 0000,staff;ops,${PASSWORD},,blue`, // lines 2-3: one record, a line break in a name
      ',nobody@example.test,No,Body,,,,,', // 4: missing username
      'bob,not-an-email,Bob,B,,,,,', // 5
      'carol,ZED@example.test,Carol,C,,,,,', // 6: zed's e-mail
      'dave,dave@example.test,Dave,D,,,short,,', // 7
      `erin,erin@example.test,Erin,E,,,${PASSWORD},${bcrypt},`, // 8: both
      'frank,frank@example.test,Frank,F,,,,$1$abcdefgh$0123456789012345678901,', // 9: md5-crypt
      '',
      `gina,gina@example.test,Gina,G,+44 20 7946 0000,staff;ops,${PASSWORD},,blue`, // 11, after an empty line
      'hank,hank@example.test,Hank,,,,,,', // 12: no last name: the empty one, as users/create takes ""
      `ivan,ivan@example.test,Ivan,I,,,,${bcrypt},`, // 13
    ].join('\r\n') + '\r\n');
    const { exitCode, summary } = await runImport(built, file);
    assert.deepStrictEqual(summary, {
      created: 3, updated: 0, unchanged: 0, failed: 7,
      errors: [
        { line: 2, message: 'firstName must not contain control characters' },
        { line: 4, message: 'username is required' },
        { line: 5, message: 'email must match pattern "^[^\\s@]+@[^\\s@]+$"' },
        { line: 6, message: 'a user with this email already exists' },
        { line: 7, message: 'password must be 8 to 128 characters' },
        { line: 8, message: 'passwordHash cannot be given with password' },
        { line: 9, message: 'passwordHash must be an argon2id or argon2i PHC string, or a bcrypt $2a$, $2b$ or $2y$ hash' },
      ],
    });
    assert.equal(exitCode, 1);
    const users = (await snapshot(built)).slice(1);
    assert.deepStrictEqual(users.map((u) => ({ ...u, passwordHash: u.passwordHash?.slice(0, 10) })), [
      { username: 'gina', email: 'gina@example.test', firstName: 'Gina', lastName: 'G', phone: '+44 20 7946 0000', alternateEmail: '',
        customAttributes: { customAttribute7: 'blue' }, groups: ['staff', 'ops'], passwordHash: '$argon2id$' },
      { username: 'hank', email: 'hank@example.test', firstName: 'Hank', lastName: '', phone: '', alternateEmail: '',
        customAttributes: {}, groups: ['DEFAULT'], passwordHash: undefined },
      { username: 'ivan', email: 'ivan@example.test', firstName: 'Ivan', lastName: 'I', phone: '', alternateEmail: '',
        customAttributes: {}, groups: ['DEFAULT'], passwordHash: bcrypt.slice(0, 10) },
    ]);
    assert.equal(await verifyPassword(users[0].passwordHash!, PASSWORD), true);
    assert.equal(users[2].passwordHash, bcrypt, 'an imported hash is kept as it is');
    assert.equal(await built.composition.services.users.findByLogin(built.customer.customerId, 'alice'), undefined, 'a refused row stores nothing');

    // Every row good: exit code 0.
    const good = join(dir, 'good.jsonl');
    writeFileSync(good, JSON.stringify({ username: 'judy', email: 'judy@example.test', firstName: 'Judy', lastName: 'J', groups: ['staff'] }) + '\n');
    assert.deepStrictEqual(await runImport(built, good), { exitCode: 0, summary: { created: 1, updated: 0, unchanged: 0, failed: 0, errors: [] } });
  });

  test('JSON lines: the line of each object, bad JSON and wrong types reported, blank lines skipped', async (t) => {
    const built = await build(t, kind);
    const file = join(tempDir(t), 'users.ndjson');
    writeFileSync(file, [
      JSON.stringify({ username: 'kim', email: 'kim@example.test', firstName: 'Kim', lastName: 'K', groups: ['a', 'b'], customAttribute1: 'x' }),
      '{"username": "lee", ',
      '',
      JSON.stringify({ username: 'max', email: 'max@example.test', firstName: 'Max', lastName: 'M', groups: 'a;b' }),
      JSON.stringify([1, 2]),
      JSON.stringify({ username: 'ned', email: 'ned@example.test', firstName: 'Ned', lastName: 'N', role: 'admin' }),
      JSON.stringify({ email: 'ola@example.test', firstName: 'Ola', lastName: 'O' }),
    ].join('\n'));
    const { exitCode, summary } = await runImport(built, file);
    assert.equal(exitCode, 1);
    assert.deepStrictEqual(summary, {
      created: 1, updated: 0, unchanged: 0, failed: 5,
      errors: [
        { line: 2, message: 'not a JSON object' },
        { line: 4, message: 'groups must be array' },
        { line: 5, message: 'not a JSON object' },
        { line: 6, message: 'role is not allowed' },
        { line: 7, message: 'username is required' },
      ],
    });
    assert.deepStrictEqual((await built.composition.services.users.getWithGroups(built.customer.customerId, 'kim')).groups, ['a', 'b']);
  });

  test('existing users are matched by username case-insensitively and updated as users/update does; a second run changes nothing', async (t) => {
    const built = await build(t, kind);
    const { users, groups } = built.composition.services;
    const customerId = built.customer.customerId;
    await groups.upsert(customerId, [{ name: 'old', isDefault: false, attributes: {} }], SYSTEM);
    await users.create(customerId, {
      username: 'Pat.Smith', email: 'pat@example.test', firstName: 'Pat', lastName: 'Smith', phone: '555',
      password: PASSWORD, groups: [{ name: 'old', attributes: [] }], customAttributes: { customAttribute2: 'kept', customAttribute3: 'three' },
    }, SYSTEM);
    const before = await users.getWithGroups(customerId, 'pat.smith');
    const dir = tempDir(t);
    const file = join(dir, 'users.csv');
    writeFileSync(file, [
      'username,email,firstName,lastName,phone,groups,password,customAttribute3',
      `pat.smith,,Patricia,,,new;Other,${PASSWORD},3`,
      `quinn,quinn@example.test,Quinn,Q,,new,${PASSWORD},`,
    ].join('\n'));
    built.clock.advance(120_000);
    assert.deepStrictEqual((await runImport(built, file)).summary, { created: 1, updated: 1, unchanged: 0, failed: 0, errors: [] });
    const after = await users.getWithGroups(customerId, 'pat.smith');
    assert.deepStrictEqual(
      { username: after.username, email: after.email, firstName: after.firstName, lastName: after.lastName, phone: after.phone, groups: after.groups, customAttributes: after.customAttributes },
      { username: 'Pat.Smith', email: 'pat@example.test', firstName: 'Patricia', lastName: 'Smith', phone: '555', groups: ['new', 'Other'],
        customAttributes: { customAttribute2: 'kept', customAttribute3: '3' } },
      'stored spelling kept, empty columns keep their values, groups replaced, the missing one created',
    );
    assert.equal(after.credentialsVersion, before.credentialsVersion, 'the same password is no password change');
    assert.equal(after.updatedAt, built.clock.now());
    const state = await snapshot(built);

    built.clock.advance(120_000);
    assert.deepStrictEqual((await runImport(built, file)).summary, { created: 0, updated: 0, unchanged: 2, failed: 0, errors: [] });
    assert.deepStrictEqual(await snapshot(built), state, 'nothing written: hashes and memberships as they were');
    assert.equal((await users.getWithGroups(customerId, 'quinn')).updatedAt, after.updatedAt, 'lastUpdatedDttm kept');

    // A new password is an update (and a new credentials version, as users/update gives).
    writeFileSync(file, 'username,password\nPAT.SMITH,indigo-walrus-canyon-7\n');
    assert.deepStrictEqual((await runImport(built, file)).summary, { created: 0, updated: 1, unchanged: 0, failed: 0, errors: [] });
    assert.ok(await users.verifyCredentials(customerId, 'pat.smith', 'indigo-walrus-canyon-7'));
    assert.equal((await users.getWithGroups(customerId, 'pat.smith')).credentialsVersion, before.credentialsVersion + 1);
    // A changed e-mail that another user holds fails that row only.
    writeFileSync(file, 'username,email\nquinn,pat@example.test\n');
    assert.deepStrictEqual((await runImport(built, file)).summary, { created: 0, updated: 0, unchanged: 0, failed: 1,
      errors: [{ line: 2, message: 'a user with this email already exists' }] });
  });

  test('an import stopped after some batches and run again ends in the state of one clean run', async (t) => {
    const built = await build(t, kind);
    const other = await built.newCustomer();
    const hash = await hashPassword(PASSWORD);
    const file = join(tempDir(t), 'users.csv');
    const lines = ['username,email,firstName,lastName,groups,passwordHash'];
    for (let i = 1; i <= 23; i++) lines.push(`user${i},user${i}@example.test,First ${i},Last,g${i % 4};all,"${hash}"`);
    writeFileSync(file, lines.join('\n') + '\n');
    const importer = createUserImportService({ db: built.composition.store.db, users: built.composition.services.users, groups: built.composition.services.groups, audit: built.composition.services.audit });
    const records = () => readCsv(createReadStream(file), checkColumns);

    let batches = 0;
    await assert.rejects(importer.importUsers(built.customer.customerId, records(), 'csv', SYSTEM, {
      batchSize: 5,
      onBatch: () => { if (++batches === 2) throw new Error('crash'); },
    }), { message: 'crash' });
    assert.equal((await snapshot(built)).length, 10, 'two batches committed');
    assert.deepStrictEqual(await importer.importUsers(built.customer.customerId, records(), 'csv', SYSTEM, { batchSize: 5 }),
      { created: 13, updated: 0, unchanged: 10, failed: 0, errors: [] });
    assert.deepStrictEqual(await importer.importUsers(other.customer.customerId, records(), 'csv', SYSTEM, { batchSize: 5 }),
      { created: 23, updated: 0, unchanged: 0, failed: 0, errors: [] });
    const resumed = await snapshot(built);
    assert.equal(resumed.length, 23);
    assert.deepStrictEqual(resumed, await snapshot(built, other.customer.customerId));
  });

  test('export, then import into another customer, exports the same (CSV and JSON lines, with hashes)', async (t) => {
    const built = await build(t, kind);
    const { users, groups } = built.composition.services;
    const customerId = built.customer.customerId;
    await groups.upsert(customerId, [{ name: 'Team, "A"', isDefault: false, attributes: {} }], SYSTEM);
    await users.create(customerId, { username: 'rae', email: 'rae@example.test', firstName: 'Rae, "R"', lastName: '=Line Two', password: PASSWORD,
      phone: '+1 (555) 010', alternateEmail: 'r2@example.test', groups: [{ name: 'Team, "A"', attributes: [] }], customAttributes: { customAttribute50: 'fifty' } }, SYSTEM);
    await users.create(customerId, { username: 'sam@example.test', firstName: 'Sam', lastName: 'S', customAttributes: {} }, SYSTEM);
    const dir = tempDir(t);
    for (const format of ['csv', 'jsonl']) {
      const out = join(dir, `users.${format}`);
      const exported = await usersExport.run(parseArgs(['users', 'export', '--customer-key', built.customer.customerKey, '--out', out,
        '--include-password-hashes', '--json']), { app: built.composition, auditContext: SYSTEM });
      assert.deepStrictEqual(exported.json, { exported: 2, out });
      const other = await built.newCustomer();
      const result = await usersImport.run(parseArgs(['users', 'import', out, '--customer-key', other.customer.customerKey, '--json']), { app: built.composition, auditContext: SYSTEM });
      assert.deepStrictEqual(result.json, { created: 2, updated: 0, unchanged: 0, failed: 0, errors: [] });
      assert.deepStrictEqual(await snapshot(built, other.customer.customerId), await snapshot(built));
    }
    // Without --include-password-hashes the column is not there.
    const plain = join(dir, 'plain.csv');
    await usersExport.run(parseArgs(['users', 'export', '--customer-key', built.customer.customerKey, '--out', plain]), { app: built.composition, auditContext: SYSTEM });
    const text = readFileSync(plain, 'utf8');
    assert.doesNotMatch(text, /passwordHash|argon2/);
    assert.match(text.split('\n')[0], /^username,email,firstName,lastName,phone,alternateEmail,customAttribute1,.*,customAttribute50,groups$/);
  });
});
