/**
 * The service methods behind the console's group and application pages, on SQLite and PostgreSQL:
 * groups.search (any part of the name, LIKE's own characters taken literally, the total), rename (its
 * login policies follow; the built-in group and a taken name refused), makeDefault, remove (memberships
 * and policies go, the default returns to the built-in group), applications.update and
 * findApplicationProblems (every broken rule, the first being what create and update throw).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { findApplicationProblems } from '../../src/identity/applications/service.ts';
import { Conflict, Invalid } from '../../src/lib/errors.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';

if (postgresUrl) await postgresStore();

describeEachStore('console edits through the services', (kind) => {
  test('groups: search, rename, make default, remove', async (t) => {
    const app = await build(t, kind);
    const customerId = app.customer.customerId;
    const { groups, users, applications, policies } = app.composition.services;
    await groups.upsert(customerId, ['Red team', 'blue_team', '100% club', 'Blueprint'].map((name) => ({ name, isDefault: false, attributes: {} })), SYSTEM);

    const names = async (text: string) => (await groups.search(customerId, { text, offset: 0, limit: 10 })).items.map((g) => g.name);
    assert.deepEqual(await names('TEAM'), ['blue_team', 'Red team']);
    assert.deepEqual(await names('_'), ['blue_team'], 'an underscore is itself, not any character');
    assert.deepEqual(await names('%'), ['100% club']);
    assert.deepEqual(await groups.search(customerId, { text: '', offset: 2, limit: 2 }), {
      items: (await groups.search(customerId, { text: '', offset: 0, limit: 10 })).items.slice(2, 4), total: 5,
    });

    const red = (await groups.findByName(customerId, 'red TEAM'))!;
    const portal = (await applications.create(customerId, { name: 'Portal', type: 'SAML', entityId: 'urn:example:portal', acsUrls: ['https://p.example.test/acs'] }, SYSTEM)).application;
    await policies.create(customerId, { applicationUuid: portal.uuid, firstFactor: 'PASSWORD', groupName: 'Red team' }, SYSTEM);
    await groups.rename(customerId, red.id, 'Crimson', SYSTEM);
    assert.equal((await groups.findByName(customerId, 'Crimson'))?.id, red.id);
    assert.deepEqual((await policies.list(customerId)).map((p) => p.groupName), ['Crimson'], 'its policy follows the group');
    await assert.rejects(groups.rename(customerId, red.id, 'BLUEPRINT', SYSTEM), (e) => e instanceof Conflict && e.message === 'groupName BLUEPRINT is taken by another group');
    await assert.rejects(groups.rename(customerId, red.id, ' padded', SYSTEM), (e) => e instanceof Invalid && e.field === 'groupName');
    await groups.rename(customerId, red.id, 'crimson', SYSTEM);
    assert.equal((await groups.findByName(customerId, 'CRIMSON'))?.name, 'crimson', 'a change of case is a rename');
    const builtIn = (await groups.findByName(customerId, 'DEFAULT'))!;
    await assert.rejects(groups.rename(customerId, builtIn.id, 'Everyone', SYSTEM), Invalid);
    await assert.rejects(groups.remove(customerId, builtIn.id, SYSTEM), Invalid);

    await groups.makeDefault(customerId, red.id, SYSTEM);
    await users.create(customerId, { username: 'ada', email: 'ada@example.test', firstName: 'A', lastName: 'L', customAttributes: {} }, SYSTEM);
    assert.deepEqual((await users.getWithGroups(customerId, 'ada')).groups, ['crimson']);
    await groups.remove(customerId, red.id, SYSTEM);
    assert.equal(await groups.findByName(customerId, 'crimson'), undefined);
    assert.equal((await groups.findByName(customerId, 'DEFAULT'))?.isDefault, true);
    assert.deepEqual(await policies.list(customerId), [], 'its policies go with it');
    assert.deepEqual((await users.getWithGroups(customerId, 'ada')).groups, []);
  });

  test('applications: update keeps the type and secret; every broken rule is listed', async (t) => {
    const app = await build(t, kind);
    const customerId = app.customer.customerId;
    const { applications } = app.composition.services;
    const created = await applications.create(customerId, { name: 'Portal', type: 'OAUTH', redirectUris: ['https://p.example.test/cb'] }, SYSTEM);
    const updated = await applications.update(customerId, created.application.uuid, { name: 'Portal 2', redirectUris: ['https://p.example.test/cb2', 'https://p.example.test/cb2'], loginUrls: ['https://p.example.test/in'] }, SYSTEM);
    assert.deepEqual({ ...updated }, { ...created.application, name: 'Portal 2', redirectUris: ['https://p.example.test/cb2'], loginUrls: ['https://p.example.test/in'] });
    assert.deepEqual(await applications.get(customerId, created.application.uuid), updated);
    await assert.rejects(applications.update(customerId, created.application.uuid, { name: 'Portal', redirectUris: [] }, SYSTEM),
      (e) => e instanceof Invalid && e.message === 'redirectUris must hold at least one URL for OAUTH applications');
    await assert.rejects(applications.update(customerId, created.application.uuid, { name: 'P', redirectUris: ['https://p.example.test/cb'], returnUrls: ['https://x.example.test'] }, SYSTEM),
      (e) => e instanceof Invalid && e.message === 'returnUrls is only for JWT applications');

    assert.deepEqual(findApplicationProblems({ name: '', type: 'JWT', returnUrls: ['https://ok.example.test', 'ftp://bad'], loginUrls: ['https://x.example.test'] }), [
      { field: 'name', reason: 'must NOT have fewer than 1 characters' },
      { field: 'returnUrls[1]', reason: 'must start with https:// or http://' },
      { field: 'loginUrls', reason: 'is only for OAUTH applications' },
    ]);
    await assert.rejects(applications.create(customerId, { name: '', type: 'JWT', returnUrls: ['ftp://bad'] }, SYSTEM), (e) => e instanceof Invalid && e.field === 'name');
  });
});
