/**
 * The audit log on both stores: an event exists exactly when its change commits; POST
 * /api/admin/audit/getall lists newest first with the filters of DESIGN "Audit log"; a signed
 * request's event names its customer key, its ip and its request id, and concurrent requests never
 * see each other's context.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { getAll, readAllPages, recordEvents } from './helpers.ts';

const newUser = () => {
  const username = `u${randomBytes(5).toString('hex')}`;
  return { username, email: `${username}@example.test`, firstName: 'Ada', lastName: 'Lovelace' };
};

describeEachStore('audit log', (kind) => {
  test('an event recorded in a transaction that rolls back does not exist; one that commits does', async (t) => {
    const env = await build(t, kind);
    const { audit } = env.composition.services;
    const customerId = env.customer.customerId;
    await assert.rejects(env.composition.store.db.transaction().execute(async (trx) => {
      await audit.record(trx, customerId, { action: 'user.deleted', target: { type: 'user', id: '1', name: 'gone' } }, SYSTEM);
      throw new Error('the change failed');
    }), /the change failed/);
    assert.deepEqual((await getAll(env.admin, env.customer.customerKey, { limit: 10 })).events, []);

    const [recorded] = await recordEvents(env, customerId, 1, 'user.deleted');
    const { events, nextCursor } = await getAll(env.admin, env.customer.customerKey, { limit: 10 });
    assert.deepEqual(events, [recorded]);
    assert.equal(nextCursor, '');
    // Outside any request or command: the system acts.
    assert.deepEqual(recorded!.actor, { type: 'system', id: '' });
    assert.match(recorded!.eventId, /^[0-9a-f-]{36}$/);
    assert.equal(recorded!.time, env.clock.now());
  });

  test('users/create through the signed API writes user.created naming the customer key, ip and request id', async (t) => {
    const env = await build(t, kind);
    const user = newUser();
    const created = await env.admin.post('/admin/users/create', { customerKey: Number(env.customer.customerKey), ...user });
    assert.equal(created.statusCode, 200, created.body);
    const userId = String((await env.composition.services.users.findByLogin(env.customer.customerId, user.username))!.id);
    const { events } = await getAll(env.admin, env.customer.customerKey, { limit: 10 });
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event!.action, 'user.created');
    assert.deepEqual(event!.actor, { type: 'api', id: env.customer.customerKey });
    assert.deepEqual(event!.target, { type: 'user', id: userId, name: user.username });
    assert.equal(event!.ip, '127.0.0.1');
    assert.equal(event!.requestId, created.headers['x-request-id']);
    assert.equal(event!.correlationId, '');
    // No secret, hash or token: the wire record holds exactly the documented fields.
    assert.deepEqual(Object.keys(event!).sort(), ['action', 'actor', 'correlationId', 'eventId', 'ip', 'requestId', 'target', 'time']);

    // A create refused (duplicate) changes nothing and writes nothing.
    const again = await env.admin.post('/admin/users/create', { customerKey: Number(env.customer.customerKey), ...user });
    assert.equal(again.statusCode, 409, again.body);
    assert.equal((await getAll(env.admin, env.customer.customerKey, { limit: 10 })).events.length, 1);
  });

  test('concurrent requests of two customers: each event carries its own request\'s actor and request id', async (t) => {
    const env = await build(t, kind);
    const other = await env.newCustomer();
    const clients = [{ admin: env.admin, customer: env.customer }, { admin: other.admin, customer: other.customer }];
    const responses = await Promise.all(Array.from({ length: 24 }, (_, i) => {
      const { admin, customer } = clients[i % 2]!;
      return admin.post('/admin/users/create', { customerKey: Number(customer.customerKey), ...newUser() }).then((response) => ({ response, customer }));
    }));
    for (const { customer, admin } of clients) {
      const mine = responses.filter((r) => r.customer === customer);
      for (const { response } of mine) assert.equal(response.statusCode, 200, response.body);
      const events = await readAllPages(admin, customer.customerKey, { limit: 5 });
      assert.equal(events.length, 12);
      assert.ok(events.every((e) => e.actor.type === 'api' && e.actor.id === customer.customerKey));
      assert.deepEqual(events.map((e) => e.requestId).sort(), mine.map((r) => r.response.headers['x-request-id']).sort());
    }
  });

  test('filters: action prefix, exact action, time window, target; newest first', async (t) => {
    const env = await build(t, kind);
    const customerId = env.customer.customerId;
    const key = env.customer.customerKey;
    const start = env.clock.now();
    const created = await recordEvents(env, customerId, 3, 'user.created');
    env.clock.advance(60_000);
    const updated = await recordEvents(env, customerId, 2, 'user.updated');
    env.clock.advance(60_000);
    const groups = await recordEvents(env, customerId, 2, 'group.updated', (i) => ({ type: 'group', id: `g${i}`, name: `Group ${i}` }));
    // A neighbour in byte order: the prefix "user." must not take it.
    await recordEvents(env, customerId, 1, 'users.imported');

    const actions = async (body: Record<string, unknown>) => (await readAllPages(env.admin, key, { limit: 2, ...body })).map((e) => e.eventId);
    const ids = (events: { eventId: string }[]) => events.map((e) => e.eventId).reverse();
    assert.deepEqual(await actions({ action: 'user.' }), ids([...created, ...updated]));
    assert.deepEqual(await actions({ action: 'user.created' }), ids(created));
    assert.deepEqual(await actions({ action: 'group' }), ids(groups));
    assert.deepEqual(await actions({ action: 'policy.' }), []);
    assert.deepEqual(await actions({ from: start + 60_000, to: start + 60_000 }), ids(updated));
    assert.deepEqual(await actions({ targetId: '1' }), ids([created[1]!, updated[1]!]));
    assert.deepEqual(await actions({ targetId: '1', action: 'user.updated' }), ids([updated[1]!]));
    const all = await readAllPages(env.admin, key, { limit: 500 });
    assert.equal(all.length, 8);
    assert.ok(all.every((e, i) => i === 0 || e.time <= all[i - 1]!.time), 'newest first');
  });

  test('limit outside 1..500, a cursor not given out, or a wrong type: 400 in the admin API\'s shape, nothing listed', async (t) => {
    const env = await build(t, kind);
    await recordEvents(env, env.customer.customerId, 1);
    const key = Number(env.customer.customerKey);
    for (const body of [{}, { limit: 0 }, { limit: 501 }, { limit: 1.5 }, { limit: '10' }, { limit: 10, cursor: 'not a cursor' }, { limit: 10, cursor: 'MA' },
      { limit: 10, from: -1 }, { limit: 10, to: 'yesterday' }, { limit: 10, action: 'user.\u00e9' }]) {
      const response = await env.admin.post('/admin/audit/getall', { customerKey: key, ...body });
      assert.equal(response.statusCode, 400, `${JSON.stringify(body)}: ${response.body}`);
      const json = response.json();
      assert.equal(json.status, 'ERROR');
      assert.equal(typeof json.code, 'string');
      assert.equal(typeof json.message, 'string');
    }
    assert.equal((await getAll(env.admin, env.customer.customerKey, { limit: 500 })).events.length, 1);
    assert.equal((await getAll(env.admin, env.customer.customerKey, { limit: 1 })).events.length, 1);
  });

  test('no route changes or deletes an event', async (t) => {
    const env = await build(t, kind);
    for (const path of ['/admin/audit/delete', '/admin/audit/update', '/admin/audit/create', '/admin/audit/purge']) {
      const response = await env.admin.post(path, { customerKey: Number(env.customer.customerKey) });
      assert.equal(response.statusCode, 404, path);
    }
  });
});
