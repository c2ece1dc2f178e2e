/**
 * The SCIM 2.0 service provider against RFC 7644: discovery documents, Users and Groups CRUD with
 * every answer's status and whole body, the error body and scimType, 401 without a token, with a
 * wrong one and with a deleted one, and tenancy (another customer's token reaches nothing of this one).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { tampered } from '../helpers/secrets.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  adminUser, BASE, buildScim, GROUP_SCHEMA, groupResource, LIST_SCHEMA, listOf, PATCH_SCHEMA, SCIM_TYPE, scimError, USER_SCHEMA, userResource,
  type ScimApp,
} from './helpers.ts';

const newUser = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER_SCHEMA], userName, name: { givenName: 'Ada', familyName: 'Lovelace' }, emails: [{ value: `${userName}@example.com`, primary: true }], ...extra,
});

async function createUser(app: ScimApp, userName: string, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await app.scim.request('POST', '/Users', newUser(userName, extra));
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id as string;
}

async function defaultGroupId(app: ScimApp): Promise<number> {
  return (await app.composition.services.groups.findByName(app.customer.customerId, 'DEFAULT'))!.id;
}

describeEachStore('SCIM protocol', (kind) => {
  test('discovery: ServiceProviderConfig, ResourceTypes and Schemas', async (t) => {
    const app = await buildScim(t, kind);
    const config = await app.scim.request('GET', '/ServiceProviderConfig');
    assert.equal(config.statusCode, 200);
    assert.equal(config.headers['content-type'], SCIM_TYPE);
    assert.deepEqual(config.json(), {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: 200 },
      changePassword: { supported: true },
      sort: { supported: false },
      etag: { supported: false },
      authenticationSchemes: [{
        type: 'oauthbearertoken', name: 'OAuth Bearer Token', primary: true,
        description: 'A SCIM token of the customer (POST /api/admin/scim-tokens/create), sent as Authorization: Bearer <token>.',
      }],
      meta: { resourceType: 'ServiceProviderConfig', location: `${BASE}/ServiceProviderConfig` },
    });

    const types = await app.scim.request('GET', '/ResourceTypes');
    assert.equal(types.statusCode, 200);
    const resourceType = (name: string, endpoint: string, schema: string, description: string) => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'], id: name, name, endpoint, description, schema,
      meta: { resourceType: 'ResourceType', location: `${BASE}/ResourceTypes/${name}` },
    });
    assert.deepEqual(types.json(), listOf([resourceType('User', '/Users', USER_SCHEMA, 'User Account'), resourceType('Group', '/Groups', GROUP_SCHEMA, 'Group')]));
    assert.deepEqual((await app.scim.request('GET', '/ResourceTypes/Group')).json(), resourceType('Group', '/Groups', GROUP_SCHEMA, 'Group'));
    assert.equal((await app.scim.request('GET', '/ResourceTypes/Device')).statusCode, 404);

    const schemas = (await app.scim.request('GET', '/Schemas')).json();
    assert.equal(schemas.schemas[0], LIST_SCHEMA);
    assert.deepEqual(schemas.Resources.map((s: { id: string }) => s.id), [USER_SCHEMA, GROUP_SCHEMA]);
    const user = schemas.Resources[0];
    assert.deepEqual(user.attributes.map((a: { name: string }) => a.name), ['userName', 'name', 'emails', 'phoneNumbers', 'active', 'password', 'groups']);
    const userName = user.attributes[0];
    assert.deepEqual(
      [userName.type, userName.required, userName.caseExact, userName.uniqueness, userName.mutability, userName.multiValued],
      ['string', true, false, 'server', 'immutable', false],
    );
    assert.deepEqual([user.attributes[5].returned, user.attributes[5].mutability], ['never', 'writeOnly'], 'password is never returned');
    assert.equal(user.attributes[6].mutability, 'readOnly', 'groups are read only');
    assert.deepEqual(user.meta, { resourceType: 'Schema', location: `${BASE}/Schemas/${USER_SCHEMA}` });
    assert.deepEqual((await app.scim.request('GET', `/Schemas/${GROUP_SCHEMA}`)).json().attributes.map((a: { name: string }) => a.name), ['displayName', 'members']);
  });

  test('Users: create, read, list with paging, replace, patch, delete; each answer whole', async (t) => {
    const app = await buildScim(t, kind);
    const at = app.clock.now();
    const groups = [{ id: await defaultGroupId(app), name: 'DEFAULT' }];
    const created = await app.scim.request('POST', '/Users', newUser('ada', { externalId: 'ext-1', phoneNumbers: [{ value: '+44 1', type: 'mobile' }], password: 'correct horse battery', displayName: 'ignored' }));
    assert.equal(created.statusCode, 201);
    const id = created.json().id as string;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.equal(created.headers.location, `${BASE}/Users/${id}`);
    const ada = { id, userName: 'ada', givenName: 'Ada', familyName: 'Lovelace', email: 'ada@example.com', active: true, externalId: 'ext-1', phone: '+44 1', groups, createdAt: at };
    assert.deepEqual(created.json(), userResource(ada));
    assert.ok(!created.body.includes('correct horse'), 'the password is never returned');
    assert.deepEqual((await app.scim.request('GET', `/Users/${id}`)).json(), userResource(ada));

    app.clock.advance(60_000);
    const grace = await createUser(app, 'grace');
    const later = app.clock.now();
    const graceResource = userResource({ id: grace, userName: 'grace', givenName: 'Ada', familyName: 'Lovelace', email: 'grace@example.com', active: true, groups, createdAt: later });
    assert.deepEqual((await app.scim.request('GET', '/Users')).json(), listOf([userResource(ada), graceResource]));
    assert.deepEqual((await app.scim.request('GET', '/Users?startIndex=2&count=1')).json(), listOf([graceResource], 2, 2));
    assert.deepEqual((await app.scim.request('GET', '/Users?startIndex=0&count=0')).json(), listOf([], 2, 1), 'count=0: only the total');
    assert.deepEqual((await app.scim.request('GET', '/Users?startIndex=3')).json(), listOf([], 2, 3));
    assert.deepEqual((await app.scim.request('GET', '/Users?startIndex=2&count=5')).json(), listOf([graceResource], 2, 2), 'a last page that is not full');

    app.clock.advance(60_000);
    const replaced = await app.scim.request('PUT', `/Users/${id}`, { schemas: [USER_SCHEMA], userName: 'ADA', name: { givenName: 'Augusta', familyName: 'King' }, active: false });
    assert.equal(replaced.statusCode, 200, replaced.body);
    const ada2 = { ...ada, givenName: 'Augusta', familyName: 'King', active: false, externalId: undefined, phone: undefined, updatedAt: app.clock.now() };
    assert.deepEqual(replaced.json(), userResource(ada2), 'PUT clears phone and externalId, keeps the e-mail');
    const record = await adminUser(app, 'ada');
    assert.deepEqual([record?.fname, record?.lname, record?.primaryPhone, record?.primaryEmail], ['Augusta', 'King', '', 'ada@example.com']);

    const patched = await app.scim.request('PATCH', `/Users/${id}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'add', path: 'name.givenName', value: 'Ada' }, { op: 'replace', path: 'active', value: true }] });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json(), userResource({ ...ada2, givenName: 'Ada', active: true }));

    assert.equal((await app.scim.request('DELETE', `/Users/${id}`)).statusCode, 204);
    assert.deepEqual((await app.scim.request('GET', `/Users/${id}`)).json(), scimError(404, 'The user does not exist.'));
    assert.equal((await app.scim.request('DELETE', `/Users/${id}`)).statusCode, 404);
    assert.equal(await adminUser(app, 'ada'), undefined);
  });

  test('Users: the admin API\'s rules, in SCIM\'s error body', async (t) => {
    const app = await buildScim(t, kind);
    await createUser(app, 'ada');
    const post = (body: unknown) => app.scim.request('POST', '/Users', body);
    const cases: [string, unknown, number, string, string | undefined][] = [
      ['duplicate userName (any case)', newUser('ADA', { emails: [{ value: 'other@example.com' }] }), 409, 'userName: a user with this username already exists', 'uniqueness'],
      ['duplicate e-mail', newUser('bob', { emails: [{ value: 'ADA@example.com' }] }), 409, 'emails: a user with this email already exists', 'uniqueness'],
      ['no userName', { schemas: [USER_SCHEMA], name: { givenName: 'A', familyName: 'B' } }, 400, 'userName is required', 'invalidValue'],
      ['no e-mail, userName not an address', { schemas: [USER_SCHEMA], userName: 'carol', name: { givenName: 'C', familyName: 'D' } }, 400, 'emails is required', 'invalidValue'],
      ['no name', { schemas: [USER_SCHEMA], userName: 'dan@example.com' }, 400, 'name.givenName is required', 'invalidValue'],
      ['bad e-mail', newUser('erin', { emails: [{ value: 'not-an-address' }] }), 400, 'emails must match pattern "^[^\\s@]+@[^\\s@]+$"', 'invalidValue'],
      ['weak password', newUser('fay', { password: 'short' }), 400, 'password must be 8 to 128 characters', 'invalidValue'],
      ['userName too long', newUser('g'.repeat(101)), 400, 'userName must NOT have more than 100 characters', 'invalidValue'],
      ['active not a boolean', newUser('hal', { active: 'maybe' }), 400, 'active must be true or false', 'invalidValue'],
      ['emails not an array', newUser('ian', { emails: 'ian@example.com' }), 400, 'emails must be an array', 'invalidValue'],
      ['a JSON array', [], 400, 'the request body must be a JSON object', 'invalidSyntax'],
      ['not JSON', '{"userName": ', 400, 'request body is not valid JSON', 'invalidSyntax'],
    ];
    for (const [name, body, status, detail, scimType] of cases) {
      const response = await post(body);
      assert.equal(response.statusCode, status, `${name}: ${response.body}`);
      assert.equal(response.headers['content-type'], SCIM_TYPE, name);
      assert.deepEqual(response.json(), scimError(status, detail, scimType), name);
    }
    // Okta's usual case: the userName is the e-mail.
    const okta = await post({ schemas: [USER_SCHEMA], userName: 'jo@example.com', name: { givenName: 'Jo', familyName: 'March' } });
    assert.equal(okta.statusCode, 201);
    assert.deepEqual(okta.json().emails, [{ value: 'jo@example.com', type: 'work', primary: true }]);
    const plain = await app.identity.inject({ method: 'POST', url: '/scim/v2/Users', headers: { authorization: `Bearer ${app.scim.token}`, 'content-type': 'text/plain' }, payload: 'x' });
    assert.deepEqual([plain.statusCode, plain.json()], [415, scimError(415, 'Content-Type must be application/scim+json or application/json')]);
    const asJson = await app.identity.inject({ method: 'POST', url: '/scim/v2/Users', headers: { authorization: `Bearer ${app.scim.token}`, 'content-type': 'application/json' }, payload: JSON.stringify(newUser('kim')) });
    assert.equal(asJson.statusCode, 201, 'application/json bodies are read too');
    assert.deepEqual((await app.scim.request('GET', '/Nowhere')).json(), scimError(404, 'No SCIM endpoint at this path.'));
    assert.deepEqual((await app.scim.request('GET', '/Users?count=ten')).json(), scimError(400, 'count must be an integer', 'invalidValue'));
  });

  test('Groups: create with members, read, list, replace, patch, delete; the built-in group stays', async (t) => {
    const app = await buildScim(t, kind);
    const at = app.clock.now();
    const ada = await createUser(app, 'ada');
    const bob = await createUser(app, 'bob');
    const created = await app.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Engineers', externalId: 'g-1', members: [{ value: ada }] });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().id as string;
    assert.equal(created.headers.location, `${BASE}/Groups/${id}`);
    const engineers = { id, displayName: 'Engineers', externalId: 'g-1', members: [{ id: ada, userName: 'ada' }], createdAt: at };
    assert.deepEqual(created.json(), groupResource(engineers));
    assert.deepEqual((await app.scim.request('GET', `/Groups/${id}`)).json(), groupResource(engineers));
    const user = (await app.scim.request('GET', `/Users/${ada}`)).json();
    assert.deepEqual(user.groups.map((g: { display: string }) => g.display), ['DEFAULT', 'Engineers']);

    const list = (await app.scim.request('GET', '/Groups?excludedAttributes=members')).json();
    assert.deepEqual(list.Resources.map((g: { displayName: string; members?: unknown }) => [g.displayName, g.members]), [['DEFAULT', undefined], ['Engineers', undefined]]);
    assert.equal(list.totalResults, 2);

    const replaced = await app.scim.request('PUT', `/Groups/${id}`, { schemas: [GROUP_SCHEMA], displayName: 'Engineering', members: [{ value: bob }] });
    assert.equal(replaced.statusCode, 200, replaced.body);
    assert.deepEqual(replaced.json(), groupResource({ id, displayName: 'Engineering', members: [{ id: bob, userName: 'bob' }], createdAt: at }));

    const patched = await app.scim.request('PATCH', `/Groups/${id}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'add', path: 'members', value: [{ value: ada }] }, { op: 'remove', path: 'members', value: [{ value: bob }] }] });
    assert.equal(patched.statusCode, 204);
    assert.deepEqual((await app.scim.request('GET', `/Groups/${id}`)).json().members.map((m: { display: string }) => m.display), ['ada']);

    const taken = await app.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'ENGINEERING' });
    assert.deepEqual([taken.statusCode, taken.json()], [409, scimError(409, 'displayName ENGINEERING is taken by another group', 'uniqueness')]);
    const unknownMember = await app.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Ghosts', members: [{ value: 'no-such-user' }] });
    assert.deepEqual([unknownMember.statusCode, unknownMember.json()], [400, scimError(400, 'members names no user: no-such-user', 'invalidValue')]);

    const builtIn = String(await defaultGroupId(app));
    assert.deepEqual((await app.scim.request('DELETE', `/Groups/${builtIn}`)).json(), scimError(400, 'Group is the built-in group, which cannot be deleted', 'mutability'));
    const rename = await app.scim.request('PATCH', `/Groups/${builtIn}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'displayName', value: 'Everyone' }] });
    assert.deepEqual(rename.json(), scimError(400, 'displayName of the built-in group cannot change', 'mutability'));

    assert.equal((await app.scim.request('DELETE', `/Groups/${id}`)).statusCode, 204);
    assert.deepEqual((await app.scim.request('GET', `/Groups/${id}`)).json(), scimError(404, 'The group does not exist.'));
    assert.deepEqual((await app.scim.request('GET', '/Groups/not-a-number')).json(), scimError(404, 'The group does not exist.'));
  });

  test('401 without a token, with a wrong one and with a deleted one, in the RFC body with WWW-Authenticate', async (t) => {
    const app = await buildScim(t, kind);
    const unauthorised = scimError(401, 'A valid SCIM bearer token is required (Authorization: Bearer <token>).');
    const attempts: [string, Record<string, string>][] = [
      ['no Authorization', {}],
      ['Basic', { authorization: 'Basic YTpi' }],
      ['a wrong token', { authorization: `Bearer ${tampered(app.scim.token, 2)}` }],
      ['the admin API key', { authorization: `Bearer ${app.customer.apiKey}` }],
    ];
    for (const [name, headers] of attempts) {
      for (const [method, url] of [['GET', '/scim/v2/Users'], ['GET', '/scim/v2/ServiceProviderConfig'], ['DELETE', '/scim/v2/Users/x']] as const) {
        const response = await app.identity.inject({ method, url, headers });
        assert.equal(response.statusCode, 401, `${name} ${method} ${url}`);
        assert.equal(response.headers['www-authenticate'], 'Bearer realm="SCIM"');
        assert.deepEqual(response.json(), unauthorised);
      }
    }
    const id = await createUser(app, 'ada');
    await app.composition.services.scimTokens.delete(app.customer.customerId, app.scim.tokenId, SYSTEM);
    const afterDelete = await app.scim.request('DELETE', `/Users/${id}`);
    assert.deepEqual([afterDelete.statusCode, afterDelete.json()], [401, unauthorised]);
    assert.ok(await adminUser(app, 'ada'), 'nothing changed');
  });

  test('tenancy: another customer\'s token never sees or changes this customer\'s users and groups', async (t) => {
    const app = await buildScim(t, kind);
    const id = await createUser(app, 'ada', { externalId: 'shared-ext' });
    const group = (await app.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Secret', members: [{ value: id }] })).json().id as string;
    const other = await app.otherCustomerScim();
    const otherUsers = (await other.request('GET', '/Users')).json();
    assert.deepEqual([otherUsers.totalResults, otherUsers.Resources], [0, []]);
    for (const filter of ['userName eq "ada"', 'externalId eq "shared-ext"', `id eq "${id}"`, 'emails co "example"']) {
      assert.equal((await other.request('GET', `/Users?filter=${encodeURIComponent(filter)}`)).json().totalResults, 0, filter);
    }
    assert.deepEqual((await other.request('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Secret"')}`)).json().totalResults, 0);
    const notFoundUser = scimError(404, 'The user does not exist.');
    const notFoundGroup = scimError(404, 'The group does not exist.');
    const tries: [string, string, unknown, unknown][] = [
      ['GET', `/Users/${id}`, undefined, notFoundUser],
      ['PUT', `/Users/${id}`, newUser('ada', { active: false }), notFoundUser],
      ['PATCH', `/Users/${id}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', value: { active: false } }] }, notFoundUser],
      ['DELETE', `/Users/${id}`, undefined, notFoundUser],
      ['GET', `/Groups/${group}`, undefined, notFoundGroup],
      ['PUT', `/Groups/${group}`, { schemas: [GROUP_SCHEMA], displayName: 'Mine' }, notFoundGroup],
      ['PATCH', `/Groups/${group}`, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'remove', path: 'members' }] }, notFoundGroup],
      ['DELETE', `/Groups/${group}`, undefined, notFoundGroup],
    ];
    for (const [method, path, body, expected] of tries) {
      const response = await other.request(method, path, body);
      assert.deepEqual([response.statusCode, response.json()], [404, expected], `${method} ${path}`);
    }
    // Its own group cannot take this customer's user as a member.
    const mine = await other.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Mine', members: [{ value: id }] });
    assert.equal(mine.statusCode, 400);
    const still = (await app.scim.request('GET', `/Users/${id}`)).json();
    assert.equal(still.active, true);
    assert.deepEqual((await app.scim.request('GET', `/Groups/${group}`)).json().members.map((m: { value: string }) => m.value), [id]);
  });
});
