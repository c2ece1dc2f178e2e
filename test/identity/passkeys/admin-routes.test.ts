/**
 * POST /api/admin/users/passkeys/getall and /delete (and under /moas/api): a user's passkeys by name and
 * minute dates, never a credential; a removed one is gone. Rows are written through the repo (a real
 * registration is the ceremonies test's); the routes read and delete them as any other.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as repo from '../../../src/identity/passkeys/repo.ts';
import { build } from '../../helpers/app.ts';
import { describeEachStore } from '../../helpers/stores.ts';

describeEachStore('admin API: users/passkeys', (kind) => {
  test('getall lists name, creationDttm and lastUsedDttm ("" until used); delete removes one; unknown user or passkey: 404; bad input: 400', async (t) => {
    const app = await build(t, kind);
    const customerKey = Number(app.customer.customerKey);
    const created = await app.admin.post('/admin/users/create', { customerKey, username: 'grace', email: 'grace@example.test', firstName: 'Grace', lastName: 'Hopper' });
    assert.equal(created.statusCode, 200, created.body);
    const user = (await app.composition.services.users.findByLogin(app.customer.customerId, 'grace'))!;
    const at = Date.UTC(2026, 10, 27, 9, 5, 30);
    const insert = (credentialId: string, name: string, lastUsedAt: number | null) => repo.insertPasskey(app.composition.store.db, {
      customerId: app.customer.customerId, userId: user.id, credentialId, publicKey: 'pQECAyYgASFY', counter: 0, transports: ['internal'],
      deviceType: 'multiDevice', backedUp: true, name, createdAt: at, lastUsedAt,
    });
    const laptop = await insert(`cred-${kind}-laptop-${at}`, 'Laptop', null);
    const phone = await insert(`cred-${kind}-phone-${at}`, 'Phone', at + 3_600_000);

    for (const prefix of ['/api', '/moas/api']) {
      const listed = await app.identity.inject({
        method: 'POST', url: `${prefix}/admin/users/passkeys/getall`,
        headers: { 'content-type': 'application/json', ...app.admin.headers() }, payload: JSON.stringify({ customerKey, username: 'grace@example.test' }),
      });
      assert.equal(listed.statusCode, 200, listed.body);
      assert.deepEqual(listed.json(), {
        status: 'SUCCESS',
        passkeys: [
          { passkeyId: String(laptop.id), name: 'Laptop', creationDttm: '2026-11-27T09:05Z', lastUsedDttm: '' },
          { passkeyId: String(phone.id), name: 'Phone', creationDttm: '2026-11-27T09:05Z', lastUsedDttm: '2026-11-27T10:05Z' },
        ],
      });
      assert.ok(!listed.body.includes('cred-') && !listed.body.includes('pQECAyYgASFY'), 'no credential data on the wire');
    }

    const removed = await app.admin.post('/admin/users/passkeys/delete', { customerKey, username: 'grace', passkeyId: String(laptop.id) });
    assert.deepEqual([removed.statusCode, removed.json()], [200, { status: 'SUCCESS', message: 'The passkey has been removed.' }]);
    const again = await app.admin.post('/admin/users/passkeys/delete', { customerKey, username: 'grace', passkeyId: String(laptop.id) });
    assert.deepEqual([again.statusCode, again.json().status, again.json().code], [404, 'ERROR', '404']);
    const after = await app.admin.post('/admin/users/passkeys/getall', { customerKey, username: 'grace' });
    assert.deepEqual(after.json().passkeys.map((p: { name: string }) => p.name), ['Phone']);

    const unknown = await app.admin.post('/admin/users/passkeys/getall', { customerKey, username: 'nobody' });
    assert.deepEqual([unknown.statusCode, unknown.json().message], [404, 'Invalid username or email.']);
    for (const body of [{ customerKey, username: 'grace' }, { customerKey, username: 'grace', passkeyId: 'abc' }, { customerKey, username: 'grace', passkeyId: 7 }]) {
      const bad = await app.admin.post('/admin/users/passkeys/delete', body);
      assert.deepEqual([bad.statusCode, bad.json().status], [400, 'ERROR'], JSON.stringify(body));
    }

    // Another customer's admin cannot see or remove them.
    const other = await app.newCustomer();
    const foreign = await other.admin.post('/admin/users/passkeys/delete', { customerKey: Number(other.customer.customerKey), username: 'grace', passkeyId: String(phone.id) });
    assert.equal(foreign.statusCode, 404);
    assert.equal((await app.admin.post('/admin/users/passkeys/getall', { customerKey, username: 'grace' })).json().passkeys.length, 1);
  });
});
