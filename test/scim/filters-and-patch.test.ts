/**
 * Tables of SCIM filters and PATCH operations, valid and invalid, injection attempts included: each
 * valid one gives exactly its results or its effect, each invalid one the RFC's 400 with its scimType
 * (invalidFilter, invalidPath, invalidValue, invalidSyntax, mutability, noTarget), never a 5xx, and
 * nothing changes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import { buildScim, ERROR_SCHEMA, GROUP_SCHEMA, PATCH_SCHEMA, USER_SCHEMA, type ScimApp } from './helpers.ts';

async function seed(app: ScimApp) {
  const create = async (userName: string, email: string, extra: Record<string, unknown> = {}) => {
    const response = await app.scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName, name: { givenName: 'G', familyName: 'F' }, emails: [{ value: email }], ...extra });
    assert.equal(response.statusCode, 201, response.body);
    return response.json().id as string;
  };
  const ada = await create('ada', 'ada@example.com', { externalId: 'EXT-1' });
  const bob = await create('bob_x', 'bob%x@example.org', { externalId: 'ext-2' });
  const zoe = await create('Zoë', 'zoe\\z@example.com', { active: false });
  const group = (await app.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Eng_1', members: [{ value: ada }] })).json().id as string;
  return { ada, bob, zoe, group };
}

const userNamesOf = async (app: ScimApp, filter: string) => {
  const response = await app.scim.request('GET', `/Users?filter=${encodeURIComponent(filter)}`);
  return { status: response.statusCode, body: response.json() };
};

describeEachStore('SCIM filters and PATCH', (kind) => {
  test('filters: results, or invalidFilter; never a 5xx, never another customer\'s', async (t) => {
    const app = await buildScim(t, kind);
    const ids = await seed(app);
    const other = await app.otherCustomerScim();
    await other.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'ada', name: { givenName: 'O', familyName: 'T' }, emails: [{ value: 'ada@example.com' }] });
    const valid: [string, string[]][] = [
      ['userName eq "ADA"', ['ada']],
      ['USERNAME EQ "ada"', ['ada']],
      ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq "ada"', ['ada']],
      ['userName eq " ada "', ['ada']],
      ['userName eq "ada" or userName eq "zoë"', ['ada', 'Zoë']],
      ['userName eq "ZOË"', ['Zoë']],
      ['userName sw "b"', ['bob_x']],
      ['userName ew "_X"', ['bob_x']],
      ['userName co "_"', ['bob_x']],
      ['userName co "%"', []],
      ['emails.value co "%"', ['bob_x']],
      ['emails co "%x@"', ['bob_x']],
      ['emails.value ew ".ORG"', ['bob_x']],
      ['emails[value eq "ada@example.com"]', ['ada']],
      ['emails.value sw "zoe\\\\z"', []],
      ['userName ne "ada"', ['bob_x', 'Zoë']],
      ['not (userName eq "ada")', ['bob_x', 'Zoë']],
      ['userName eq "ada" and emails.value co "example.com"', ['ada']],
      ['(userName eq "ada" or userName eq "bob_x") and not (externalId eq "ext-2")', ['ada']],
      ['externalId eq "EXT-1"', ['ada']],
      ['externalId eq "ext-1"', []],
      ['externalId co "XT"', ['ada']],
      ['externalId co "xt"', ['bob_x']],
      ['externalId sw "ext"', ['bob_x']],
      ['externalId ew "-2"', ['bob_x']],
      ['externalId pr', ['ada', 'bob_x']],
      ['not (externalId pr)', ['Zoë']],
      ['active eq false', ['Zoë']],
      ['active ne false', ['ada', 'bob_x']],
      [`id eq "${ids.bob}"`, ['bob_x']],
      ['userName eq "ada\\" or \\"1\\"=\\"1"', []],
      ['userName eq "x\'; drop table users; --"', []],
      ['userName eq "ada\') or (\'1\'=\'1"', []],
      ['userName co "\u0000"', []],
      ['userName eq "🙂"', []],
    ];
    for (const [filter, expected] of valid) {
      const { status, body } = await userNamesOf(app, filter);
      if (status !== 200) {
        // A value holding a NUL is refused before the filter is read (invalidValue): still a 4xx.
        assert.ok(status === 400 && filter.includes('\u0000'), `${filter}: ${status} ${JSON.stringify(body)}`);
        continue;
      }
      assert.deepEqual(body.Resources.map((u: { userName: string }) => u.userName), expected, filter);
      assert.equal(body.totalResults, expected.length, filter);
    }
    const invalid = [
      '', 'userName', 'userName eq', 'userName xx "a"', 'title eq "x"', 'userName gt "a"', 'active eq "yes"', 'userName eq 1',
      'userName eq true', '(userName eq "a"', 'userName eq "a" and', 'userName eq "a") or (1=1', "' or 1=1 --", 'userName eq "a" or 1=1',
      'emails[type eq "work"]', 'emails[value eq "a"].type eq "x"', 'members.value eq "x"', 'id co "1"', 'userName eq "a" ; delete',
      `userName eq "${'a'.repeat(2000)}"`, `${'not ('.repeat(12)}userName eq "a"${')'.repeat(12)}`,
      Array.from({ length: 60 }, (_, i) => `userName eq "u${i}"`).join(' or '), '(((((((((((((((((((((((((((', '"', '\\', 'userName eq "\\"',
      'userName ＥＱ "a"', 'urn:example:custom:attr eq "a"', 'userName eq "a" or userName eq',
    ];
    for (const filter of invalid) {
      const { status, body } = await userNamesOf(app, filter);
      assert.equal(status, 400, `${filter}: ${JSON.stringify(body)}`);
      assert.deepEqual([body.schemas, body.status, body.scimType], [[ERROR_SCHEMA], '400', 'invalidFilter'], filter);
    }
    const repeated = await app.scim.request('GET', '/Users?filter=userName%20eq%20%22a%22&filter=userName%20eq%20%22b%22');
    assert.equal(repeated.json().scimType, 'invalidFilter');

    const groups = async (filter: string) => (await app.scim.request('GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent(filter)}`)).json();
    assert.deepEqual((await groups('displayName eq "eng_1"')).Resources.map((g: { id: string }) => g.id), [ids.group]);
    assert.deepEqual((await groups('displayName co "_"')).Resources.map((g: { id: string }) => g.id), [ids.group]);
    assert.deepEqual((await groups(`members.value eq "${ids.ada}"`)).Resources.map((g: { displayName: string }) => g.displayName), ['DEFAULT', 'Eng_1']);
    assert.deepEqual((await groups(`members[value eq "${ids.bob}"]`)).Resources.map((g: { displayName: string }) => g.displayName), ['DEFAULT']);
    assert.equal((await groups('id eq "abc"')).totalResults, 0);
    assert.equal((await groups(`id eq "${ids.group}"`)).totalResults, 1);
    for (const filter of ['id co "1"', 'members.value co "a"', 'userName eq "a"', 'displayName']) assert.equal((await groups(filter)).scimType, 'invalidFilter', filter);
  });

  test('PATCH of a user: each valid operation\'s effect, each invalid one\'s error with nothing changed', async (t) => {
    const app = await buildScim(t, kind);
    const { ada } = await seed(app);
    const patch = (...operations: unknown[]) => app.scim.request('PATCH', `/Users/${ada}`, { schemas: [PATCH_SCHEMA], Operations: operations });
    const valid: [string, unknown[], (user: Record<string, any>) => unknown, unknown][] = [
      ['replace name.givenName', [{ op: 'replace', path: 'name.givenName', value: 'Ada' }], (u) => u.name.givenName, 'Ada'],
      ['REPLACE in capitals, core URN path', [{ op: 'REPLACE', path: 'urn:ietf:params:scim:schemas:core:2.0:User:name.familyName', value: 'Lovelace' }], (u) => u.name, { givenName: 'Ada', familyName: 'Lovelace' }],
      ['pathless replace with a dotted key', [{ op: 'replace', value: { 'name.givenName': 'Augusta' } }], (u) => u.name.givenName, 'Augusta'],
      ['add phoneNumbers', [{ op: 'add', path: 'phoneNumbers', value: [{ value: '+44 20 7946 0000', type: 'mobile' }] }], (u) => u.phoneNumbers[0].value, '+44 20 7946 0000'],
      ['remove phoneNumbers', [{ op: 'remove', path: 'phoneNumbers' }], (u) => u.phoneNumbers, undefined],
      ['replace externalId', [{ op: 'replace', path: 'externalId', value: 'EXT-9' }], (u) => u.externalId, 'EXT-9'],
      ['remove externalId', [{ op: 'remove', path: 'externalId' }], (u) => u.externalId, undefined],
      ['replace emails[type eq "work"].value', [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'augusta@example.com' }], (u) => u.emails, [{ value: 'augusta@example.com', type: 'work', primary: true }]],
      ['replace emails[type eq "home"].value (added, not primary)', [{ op: 'replace', path: 'emails[type eq "home"].value', value: 'home@example.com' }], (u) => u.emails[0].value, 'augusta@example.com'],
      ['ignored attributes: title, displayName, enterprise', [
        { op: 'replace', path: 'title', value: 'Countess' }, { op: 'add', path: 'displayName', value: 'Ada' },
        { op: 'add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: { value: 'x' } },
        { op: 'replace', path: 'name.formatted', value: 'Ada L' },
      ], (u) => u.name, { givenName: 'Augusta', familyName: 'Lovelace' }],
      ['active "false" in lower case', [{ op: 'replace', path: 'active', value: 'false' }], (u) => u.active, false],
      ['pathless add of active true', [{ op: 'add', value: { active: true } }], (u) => u.active, true],
      ['userName in another case is no change', [{ op: 'replace', path: 'userName', value: 'ADA' }], (u) => u.userName, 'ada'],
      ['several operations in order', [{ op: 'replace', path: 'name.givenName', value: 'A' }, { op: 'replace', path: 'name.givenName', value: 'B' }], (u) => u.name.givenName, 'B'],
      ['the password (never shown)', [{ op: 'replace', path: 'password', value: 'a long enough secret' }], (u) => u.password, undefined],
    ];
    for (const [name, operations, read, expected] of valid) {
      const response = await patch(...operations);
      assert.equal(response.statusCode, 200, `${name}: ${response.body}`);
      assert.deepEqual(read(response.json()), expected, name);
    }
    assert.ok(await app.composition.services.users.verifyCredentials(app.customer.customerId, 'ada', 'a long enough secret'));

    const before = (await app.scim.request('GET', `/Users/${ada}`)).body;
    const invalid: [string, unknown, string][] = [
      ['unknown attribute', [{ op: 'replace', path: 'foo', value: 'x' }], 'invalidPath'],
      ['unknown sub-attribute', [{ op: 'replace', path: 'name.nickname', value: 'x' }], 'invalidPath'],
      ['broken value filter', [{ op: 'replace', path: 'emails[type eq', value: 'x' }], 'invalidPath'],
      ['filter on a single-valued attribute', [{ op: 'replace', path: 'active[value eq "x"]', value: true }], 'invalidPath'],
      ['unknown schema', [{ op: 'replace', path: 'urn:example:custom:attr', value: 'x' }], 'invalidPath'],
      ['path of another kind', [{ op: 'replace', path: 'members', value: [] }], 'invalidPath'],
      ['an empty path', [{ op: 'replace', path: ' ', value: 'x' }], 'invalidPath'],
      ['a path that is no string', [{ op: 'replace', path: 7, value: 'x' }], 'invalidPath'],
      ['SQL in a path', [{ op: 'replace', path: 'userName; drop table users', value: 'x' }], 'invalidPath'],
      ['pathless unknown key', [{ op: 'replace', value: { nonsense: 1 } }], 'invalidPath'],
      ['id', [{ op: 'replace', path: 'id', value: 'x' }], 'mutability'],
      ['meta.created', [{ op: 'replace', path: 'meta.created', value: 'x' }], 'mutability'],
      ['groups', [{ op: 'add', path: 'groups', value: [{ value: '1' }] }], 'mutability'],
      ['another userName', [{ op: 'replace', path: 'userName', value: 'someone' }], 'mutability'],
      ['remove userName', [{ op: 'remove', path: 'userName' }], 'mutability'],
      ['op move', [{ op: 'move', path: 'active', value: true }], 'invalidSyntax'],
      ['no op', [{ path: 'active', value: true }], 'invalidSyntax'],
      ['an operation that is no object', ['replace'], 'invalidSyntax'],
      ['remove without a path', [{ op: 'remove' }], 'noTarget'],
      ['pathless with a string value', [{ op: 'replace', value: 'x' }], 'invalidValue'],
      ['active maybe', [{ op: 'replace', path: 'active', value: 'maybe' }], 'invalidValue'],
      ['givenName a number', [{ op: 'replace', path: 'name.givenName', value: 123 }], 'invalidValue'],
      ['givenName too long', [{ op: 'replace', path: 'name.givenName', value: 'x'.repeat(101) }], 'invalidValue'],
      ['a weak password', [{ op: 'replace', path: 'password', value: 'short' }], 'invalidValue'],
      ['emails given a string', [{ op: 'add', path: 'emails', value: 'x@example.com' }], 'invalidValue'],
      ['name given a string', [{ op: 'replace', path: 'name', value: 'Ada' }], 'invalidValue'],
      ['an e-mail another user has', [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'BOB%x@example.org' }], 'uniqueness'],
    ];
    for (const [name, operations, scimType] of invalid) {
      const response = await patch(...(operations as unknown[]));
      assert.ok(response.statusCode === 400 || (scimType === 'uniqueness' && response.statusCode === 409), `${name}: ${response.statusCode} ${response.body}`);
      assert.deepEqual([response.json().schemas, response.json().scimType], [[ERROR_SCHEMA], scimType], `${name}: ${response.body}`);
    }
    const bodies: [string, unknown, string][] = [
      ['no schemas', { Operations: [{ op: 'replace', path: 'active', value: true }] }, 'invalidSyntax'],
      ['no Operations', { schemas: [PATCH_SCHEMA] }, 'invalidSyntax'],
      ['empty Operations', { schemas: [PATCH_SCHEMA], Operations: [] }, 'invalidSyntax'],
      ['Operations an object', { schemas: [PATCH_SCHEMA], Operations: { op: 'replace' } }, 'invalidSyntax'],
      ['too many operations', { schemas: [PATCH_SCHEMA], Operations: Array.from({ length: 101 }, () => ({ op: 'replace', path: 'active', value: true })) }, 'tooMany'],
      ['a string body', 'replace', 'invalidSyntax'],
      ['null', 'null', 'invalidSyntax'],
    ];
    for (const [name, body, scimType] of bodies) {
      const response = await app.scim.request('PATCH', `/Users/${ada}`, body);
      assert.deepEqual([response.statusCode, response.json().scimType], [400, scimType], `${name}: ${response.body}`);
    }
    assert.equal((await app.scim.request('GET', `/Users/${ada}`)).body, before, 'no refused PATCH changed anything');
  });

  test('PATCH of a group: member operations and their refusals', async (t) => {
    const app = await buildScim(t, kind);
    const { ada, bob, zoe, group } = await seed(app);
    const patch = (...operations: unknown[]) => app.scim.request('PATCH', `/Groups/${group}`, { schemas: [PATCH_SCHEMA], Operations: operations });
    const members = async () => ((await app.scim.request('GET', `/Groups/${group}`)).json().members as { value: string }[]).map((m) => m.value).sort();
    const valid: [string, unknown[], string[]][] = [
      ['add two, one already in', [{ op: 'add', path: 'members', value: [{ value: ada }, { value: bob }] }], [ada, bob]],
      ['remove by a filter with or', [{ op: 'remove', path: `members[value eq "${ada}" or value eq "${bob}"]` }], []],
      ['replace the members', [{ op: 'replace', path: 'members', value: [{ value: zoe }, { value: bob }] }], [bob, zoe]],
      ['remove someone not a member', [{ op: 'remove', path: 'members', value: [{ value: ada }] }], [bob, zoe]],
      ['pathless add of members', [{ op: 'Add', value: { members: [{ value: ada }] } }], [ada, bob, zoe]],
      ['remove them all', [{ op: 'remove', path: 'members' }], []],
      ['rename and externalId', [{ op: 'replace', value: { displayName: 'Eng 2', externalId: 'g-9' } }], []],
    ];
    for (const [name, operations, expected] of valid) {
      const response = await patch(...operations);
      assert.equal(response.statusCode, 204, `${name}: ${response.body}`);
      assert.deepEqual(await members(), [...expected].sort(), name);
    }
    const after = (await app.scim.request('GET', `/Groups/${group}`)).json();
    assert.deepEqual([after.displayName, after.externalId], ['Eng 2', 'g-9']);
    const invalid: [string, unknown[], string][] = [
      ['a member that is no user', [{ op: 'add', path: 'members', value: [{ value: 'nobody' }] }], 'invalidValue'],
      ['members as a string', [{ op: 'add', path: 'members', value: ada }], 'invalidValue'],
      ['replace by filter', [{ op: 'replace', path: `members[value eq "${ada}"]`, value: [] }], 'invalidPath'],
      ['remove by display', [{ op: 'remove', path: 'members[display eq "ada"]' }], 'invalidPath'],
      ['members.display', [{ op: 'replace', path: 'members.display', value: 'x' }], 'invalidPath'],
      ['unknown attribute', [{ op: 'replace', path: 'owners', value: [] }], 'invalidPath'],
      ['remove displayName', [{ op: 'remove', path: 'displayName' }], 'mutability'],
      ['id', [{ op: 'replace', path: 'id', value: '9' }], 'mutability'],
      ['displayName a number', [{ op: 'replace', path: 'displayName', value: 5 }], 'invalidValue'],
      ['displayName empty', [{ op: 'replace', path: 'displayName', value: '' }], 'invalidValue'],
      ['displayName of another group', [{ op: 'replace', path: 'displayName', value: 'default' }], 'uniqueness'],
    ];
    for (const [name, operations, scimType] of invalid) {
      const response = await patch(...operations);
      assert.ok(response.statusCode === 400 || (scimType === 'uniqueness' && response.statusCode === 409), `${name}: ${response.statusCode} ${response.body}`);
      assert.equal(response.json().scimType, scimType, `${name}: ${response.body}`);
    }
    assert.deepEqual(await members(), []);
  });
});
