/**
 * The site face's writes in the audit log, on both stores: a user's API key created and revoked, and
 * an API token created and deleted, through the site's REST routes, each recorded as that user (the
 * caller) with the request's ip; the key's or token's secret appears nowhere in the events.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '../../src/audit/types.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { bearer, buildSite, type SiteTest } from '../site/helpers.ts';

const KEYS_PATH = '/cms-json/api/v1/api-keys';

async function newEvents(s: SiteTest, fn: () => Promise<unknown>): Promise<AuditEvent[]> {
  const before = new Set((await s.composition.services.audit.list(s.customerId, { limit: 500 })).events.map((e) => e.eventId));
  await fn();
  return (await s.composition.services.audit.list(s.customerId, { limit: 500 })).events.filter((e) => !before.has(e.eventId)).reverse();
}

describeEachStore('audit events of the site', (kind) => {
  test('API keys and API tokens: created, revoked and deleted as the calling user, no secret in any event', async (t) => {
    const s = await buildSite(t, kind);
    const erin = await s.addUser('erin');
    const jwt = await s.token('erin');
    const asErin = { type: 'user', id: String(erin.id) };

    let key: { id: number; apiKey: string } | undefined;
    const created = await newEvents(s, async () => {
      const response = await s.inject({ method: 'POST', url: KEYS_PATH, headers: bearer(jwt), payload: { name: 'deploy' } });
      assert.equal(response.statusCode, 201, response.body);
      key = response.json();
    });
    assert.deepEqual(created.map((e) => ({ action: e.action, actor: e.actor, target: e.target })), [
      { action: 'apikey.created', actor: asErin, target: { type: 'apikey', id: String(key!.id), name: 'deploy' } },
    ]);
    assert.equal(created[0]!.ip, '127.0.0.1');
    const revoked = await newEvents(s, async () => {
      const response = await s.inject({ method: 'DELETE', url: `${KEYS_PATH}/${key!.id}`, headers: bearer(jwt) });
      assert.equal(response.statusCode, 200, response.body);
    });
    assert.deepEqual(revoked.map((e) => ({ action: e.action, actor: e.actor, target: e.target })), [
      { action: 'apikey.revoked', actor: asErin, target: { type: 'apikey', id: String(key!.id), name: 'deploy' } },
    ]);

    let token: { id: number; token?: string; secret?: string } | undefined;
    const tokenCreated = await newEvents(s, async () => {
      const response = await s.inject({ method: 'POST', url: '/rest/api/2/tokens', headers: bearer(jwt), payload: { name: 'laptop', type: 'bearer' } });
      assert.equal(response.statusCode, 201, response.body);
      token = response.json();
    });
    assert.deepEqual(tokenCreated.map((e) => ({ action: e.action, actor: e.actor, target: e.target })), [
      { action: 'apitoken.created', actor: asErin, target: { type: 'apitoken', id: String(token!.id), name: 'laptop' } },
    ]);
    const tokenDeleted = await newEvents(s, async () => {
      const response = await s.inject({ method: 'DELETE', url: `/rest/api/2/tokens/${token!.id}`, headers: bearer(jwt) });
      assert.ok(response.statusCode < 300, response.body);
    });
    assert.deepEqual(tokenDeleted.map((e) => ({ action: e.action, actor: e.actor, target: e.target })), [
      { action: 'apitoken.deleted', actor: asErin, target: { type: 'apitoken', id: String(token!.id), name: 'laptop' } },
    ]);

    const everything = JSON.stringify((await s.composition.services.audit.list(s.customerId, { limit: 500 })).events);
    for (const secret of [key!.apiKey, token!.token, token!.secret, jwt].filter((v): v is string => typeof v === 'string')) {
      assert.ok(!everything.includes(secret), 'no secret in the events');
    }
  });
});
