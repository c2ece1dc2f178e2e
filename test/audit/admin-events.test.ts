/**
 * Every admin-API route, driven from the served OpenAPI document: each route that writes has a case
 * here that calls it through the signed API and finds exactly the documented event(s) — action,
 * target, the api actor (the customer key), the request's ip and request id; each read route writes
 * none. A route in neither table fails the test, so a new route cannot land without its event.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import type { AuditEvent, AuditTarget } from '../../src/audit/types.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { insertPasskey } from '../../src/identity/passkeys/repo.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { readAllPages } from './helpers.ts';

const RETURN_URL = 'https://app.example.test/sso/return';
const GA = 'GOOGLE AUTHENTICATOR';

interface Fixture { [name: string]: string | number }
interface Case {
  /** Makes what the call needs (through the services: its events are not the call's). */
  setup?: (env: TestApp, ck: number) => Promise<Fixture>;
  body: (ck: number, f: Fixture) => Record<string, unknown>;
  /** The events the call writes, oldest first. */
  events: (env: TestApp, f: Fixture) => Promise<{ action: string; target: AuditTarget }[]>;
}

const name = (prefix: string) => `${prefix}${randomBytes(4).toString('hex')}`;

async function newUser(env: TestApp, extra: { password?: string } = {}) {
  const username = name('u');
  const user = await env.composition.services.users.create(env.customer.customerId, {
    username, email: `${username}@example.test`, firstName: 'Ada', lastName: 'Lovelace', customAttributes: {}, ...extra,
  }, SYSTEM);
  return { userId: user.id, username, email: user.email };
}

const userOf = (f: Fixture): AuditTarget => ({ type: 'user', id: String(f.userId), name: String(f.username) });

async function jwtApplication(env: TestApp) {
  const { application } = await env.composition.services.applications.create(env.customer.customerId, {
    name: name('App '), type: 'JWT', returnUrls: [RETURN_URL], redirectUris: [], loginUrls: [],
  }, SYSTEM);
  return application;
}

async function magicLinkFixture(env: TestApp) {
  const user = await newUser(env);
  const application = await jwtApplication(env);
  await env.composition.services.policies.create(env.customer.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK' }, SYSTEM);
  return { ...user, applicationUuid: application.uuid };
}

/** A user with an active authenticator (registered and validated through the service). */
async function userWithAuthenticator(env: TestApp) {
  const user = await newUser(env);
  const { mfa } = env.composition.services;
  const { secret } = await mfa.register(env.customer.customerId, { login: user.username, customerDisplayName: 'Test' });
  await mfa.validate(env.customer.customerId, { login: user.username, secret, otp: totpAt(secret, env.clock.now()) }, SYSTEM);
  return user;
}

/** A stored passkey of the user (as a registration leaves it; the ceremony itself is the passkeys' tests'). */
async function userWithPasskey(env: TestApp) {
  const user = await newUser(env);
  const passkey = await insertPasskey(env.composition.store.db, {
    customerId: env.customer.customerId, userId: user.userId, credentialId: name('cred'), publicKey: 'AAAA', counter: 0,
    transports: [], deviceType: 'singleDevice', backedUp: false, name: 'Laptop', createdAt: env.clock.now(), lastUsedAt: null,
  });
  return { ...user, passkeyId: String(passkey.id) };
}

/** Admin routes that write, by path (without the /api prefix). */
const WRITES: Record<string, Case> = {
  '/admin/users/passkeys/delete': {
    setup: userWithPasskey,
    body: (ck, f) => ({ customerKey: ck, username: f.username, passkeyId: f.passkeyId }),
    events: async (_env, f) => [{ action: 'user.passkey.removed', target: userOf(f) }],
  },
  '/admin/webhooks/create': {
    setup: async () => ({ url: `https://hooks.example.test/${name('h')}` }),
    body: (ck, f) => ({ customerKey: ck, url: f.url, events: ['user.'] }),
    events: async (env, f) => {
      const webhook = (await env.composition.services.webhooks.list(env.customer.customerId)).find((w) => w.url === f.url)!;
      return [{ action: 'webhook.created', target: { type: 'webhook', id: webhook.webhookId, name: String(f.url) } }];
    },
  },
  '/admin/webhooks/delete': {
    setup: async (env) => {
      const url = `https://hooks.example.test/${name('h')}`;
      const { webhook } = await env.composition.services.webhooks.create(env.customer.customerId, { url, events: ['user.'] }, SYSTEM);
      return { webhookId: webhook.webhookId, url };
    },
    body: (ck, f) => ({ customerKey: ck, webhookId: f.webhookId }),
    events: async (_env, f) => [{ action: 'webhook.deleted', target: { type: 'webhook', id: String(f.webhookId), name: String(f.url) } }],
  },
  '/admin/scim-tokens/create': {
    setup: async () => ({ tokenName: name('Okta ') }),
    body: (ck, f) => ({ customerKey: ck, name: f.tokenName }),
    events: async (env, f) => {
      const token = (await env.composition.services.scimTokens.list(env.customer.customerId)).find((s) => s.name === f.tokenName)!;
      return [{ action: 'scimtoken.created', target: { type: 'scimtoken', id: token.tokenId, name: String(f.tokenName) } }];
    },
  },
  '/admin/scim-tokens/delete': {
    setup: async (env) => {
      const { scimToken } = await env.composition.services.scimTokens.create(env.customer.customerId, name('Entra '), SYSTEM);
      return { tokenId: scimToken.tokenId, tokenName: scimToken.name };
    },
    body: (ck, f) => ({ customerKey: ck, tokenId: f.tokenId }),
    events: async (_env, f) => [{ action: 'scimtoken.deleted', target: { type: 'scimtoken', id: String(f.tokenId), name: String(f.tokenName) } }],
  },
  '/admin/users/create': {
    setup: async () => ({ username: name('u') }),
    body: (ck, f) => ({ customerKey: ck, username: f.username, email: `${f.username}@example.test`, firstName: 'A', lastName: 'B' }),
    events: async (env, f) => {
      const user = await env.composition.services.users.findByLogin(env.customer.customerId, String(f.username));
      return [{ action: 'user.created', target: { type: 'user', id: String(user!.id), name: String(f.username) } }];
    },
  },
  '/admin/users/update': {
    setup: (env) => newUser(env),
    body: (ck, f) => ({ customerKey: ck, username: f.username, firstName: 'Grace' }),
    events: async (_env, f) => [{ action: 'user.updated', target: userOf(f) }],
  },
  '/admin/users/delete': {
    setup: (env) => newUser(env),
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async (_env, f) => [{ action: 'user.deleted', target: userOf(f) }],
  },
  '/admin/users/disable': {
    setup: (env) => newUser(env),
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async (_env, f) => [{ action: 'user.disabled', target: userOf(f) }],
  },
  '/admin/users/enable': {
    setup: async (env) => {
      const user = await newUser(env);
      await env.composition.services.users.setDisabled(env.customer.customerId, user.username, true, SYSTEM);
      return user;
    },
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async (_env, f) => [{ action: 'user.enabled', target: userOf(f) }],
  },
  '/admin/users/change-password': {
    setup: (env) => newUser(env, { password: 'Old-passw0rd-long' }),
    body: (ck, f) => ({ customerKey: ck, username: f.username, oldPassword: 'Old-passw0rd-long', password: 'New-passw0rd-longer' }),
    events: async (_env, f) => [{ action: 'user.password.changed', target: userOf(f) }],
  },
  '/admin/users/mfa/reset': {
    setup: (env) => userWithAuthenticator(env),
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async (_env, f) => [{ action: 'user.mfa.removed', target: userOf(f) }],
  },
  '/auth/google-auth-secret': {
    // A pending registration changes nothing the user signs in with: the enrolment is the validation's event.
    setup: (env) => newUser(env),
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async () => [],
  },
  '/auth/validate-google-auth-secret': {
    setup: async (env) => {
      const user = await newUser(env);
      const { secret } = await env.composition.services.mfa.register(env.customer.customerId, { login: user.username, customerDisplayName: 'Test' });
      return { ...user, secret, otp: totpAt(secret, env.clock.now()) };
    },
    body: (ck, f) => ({ customerKey: ck, username: f.username, authenticatorType: GA, secret: f.secret, otpToken: f.otp }),
    events: async (_env, f) => [{ action: 'user.mfa.enrolled', target: userOf(f) }],
  },
  '/admin/users/sessions/revoke': {
    setup: async (env) => {
      const user = await newUser(env);
      await env.composition.services.ssoSessions.open(env.customer.customerId, Number(user.userId), ['pwd'], { userAgent: 'test', address: '127.0.0.1' });
      return user;
    },
    body: (ck, f) => ({ customerKey: ck, username: f.username }),
    events: async (_env, f) => [{ action: 'user.sessions.revoked', target: userOf(f) }],
  },
  '/admin/groups/update': {
    setup: async () => ({ groupName: name('Group ') }),
    body: (ck, f) => ({ customerKey: ck, groups: [{ groupName: f.groupName, isDefault: false }] }),
    events: async (env, f) => {
      const group = await env.composition.services.groups.findByName(env.customer.customerId, String(f.groupName));
      return [{ action: 'group.updated', target: { type: 'group', id: String(group!.id), name: String(f.groupName) } }];
    },
  },
  '/admin/groups/members/update': {
    setup: async (env) => {
      const user = await newUser(env);
      const groupName = name('Group ');
      await env.composition.services.groups.upsert(env.customer.customerId, [{ name: groupName, isDefault: false, attributes: {} }], SYSTEM);
      const group = await env.composition.services.groups.findByName(env.customer.customerId, groupName);
      return { ...user, groupName, groupId: group!.id };
    },
    body: (ck, f) => ({ customerKey: ck, groupName: f.groupName, users: [{ primaryEmail: f.email }] }),
    events: async (_env, f) => [{ action: 'group.members.updated', target: { type: 'group', id: String(f.groupId), name: String(f.groupName) } }],
  },
  '/admin/applications/create': {
    setup: async () => ({ name: name('App ') }),
    body: (ck, f) => ({ customerKey: ck, name: f.name, type: 'JWT', returnUrls: [RETURN_URL] }),
    events: async (env, f) => {
      const application = (await env.composition.services.applications.list(env.customer.customerId)).find((a) => a.name === f.name)!;
      return [{ action: 'application.created', target: { type: 'application', id: application.uuid, name: String(f.name) } }];
    },
  },
  '/admin/applications/delete': {
    setup: async (env) => {
      const application = await jwtApplication(env);
      return { uuid: application.uuid, name: application.name };
    },
    body: (ck, f) => ({ customerKey: ck, applicationUuid: f.uuid }),
    events: async (_env, f) => [{ action: 'application.deleted', target: { type: 'application', id: String(f.uuid), name: String(f.name) } }],
  },
  '/admin/policies/create': {
    setup: async (env) => ({ uuid: (await jwtApplication(env)).uuid }),
    body: (ck, f) => ({ customerKey: ck, applicationUuid: f.uuid, firstFactor: 'MAGIC_LINK' }),
    events: async (env, f) => {
      const policy = (await env.composition.services.policies.list(env.customer.customerId)).find((p) => p.applicationUuid === f.uuid)!;
      return [{ action: 'policy.created', target: { type: 'policy', id: String(policy.id), name: '' } }];
    },
  },
  '/admin/policies/delete': {
    setup: async (env) => {
      const application = await jwtApplication(env);
      const groupName = name('Group ');
      await env.composition.services.groups.upsert(env.customer.customerId, [{ name: groupName, isDefault: false, attributes: {} }], SYSTEM);
      const policy = await env.composition.services.policies.create(env.customer.customerId, { applicationUuid: application.uuid, firstFactor: 'PASSWORD', groupName }, SYSTEM);
      return { policyId: policy.id, groupName };
    },
    body: (ck, f) => ({ customerKey: ck, policyId: f.policyId }),
    events: async (_env, f) => [{ action: 'policy.deleted', target: { type: 'policy', id: String(f.policyId), name: String(f.groupName) } }],
  },
  '/admin/oauth-clients/create': {
    setup: async () => ({ name: name('Client ') }),
    body: (ck, f) => ({ customerKey: ck, name: f.name }),
    events: async (env, f) => {
      const client = (await env.composition.services.oauthClients.list(env.customer.customerId)).find((c) => c.name === f.name)!;
      return [{ action: 'oauthclient.created', target: { type: 'oauthclient', id: client.clientId, name: String(f.name) } }];
    },
  },
  '/admin/oauth-clients/delete': {
    setup: async (env) => {
      const { client } = await env.composition.services.oauthClients.create(env.customer.customerId, { name: name('Client ') }, SYSTEM);
      return { clientId: client.clientId, name: client.name };
    },
    body: (ck, f) => ({ customerKey: ck, clientId: f.clientId }),
    events: async (_env, f) => [{ action: 'oauthclient.deleted', target: { type: 'oauthclient', id: String(f.clientId), name: String(f.name) } }],
  },
  '/admin/magiclink/generate': {
    setup: (env) => magicLinkFixture(env),
    body: (_ck, f) => ({ username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL }),
    events: async (_env, f) => [{ action: 'magiclink.generated', target: userOf(f) }],
  },
  '/admin/magiclink/revoke': {
    setup: async (env) => {
      const f = await magicLinkFixture(env);
      await env.composition.services.magicLinks.generate(env.customer.customerId, { username: f.username, applicationUuid: f.applicationUuid, redirectUri: RETURN_URL }, 'setup', SYSTEM);
      return f;
    },
    body: (_ck, f) => ({ username: f.username }),
    events: async (_env, f) => [{ action: 'magiclink.revoked', target: userOf(f) }],
  },
};

/** Admin routes that only read, by path, each with a body it answers 200 to. */
const READS: Record<string, { method?: 'GET'; body?: (ck: number, f: Fixture) => Record<string, unknown> }> = {
  '/admin/users/getall': { body: (ck) => ({ customerKey: ck, batchSize: 10, batchNo: 1 }) },
  '/admin/users/get': { body: (ck, f) => ({ customerKey: ck, username: f.username }) },
  '/admin/users/search': { body: (ck, f) => ({ customerKey: ck, username: f.username }) },
  '/admin/users/stats/count': { method: 'GET' },
  '/admin/groups/getall': { body: (ck) => ({ customerKey: ck, batchSize: 10, batchNo: 1 }) },
  '/admin/groups/members': { body: (ck) => ({ customerKey: ck, batchSize: 10, batchNo: 1 }) },
  '/admin/applications/getall': { body: (ck) => ({ customerKey: ck }) },
  '/admin/policies/getall': { body: (ck) => ({ customerKey: ck }) },
  '/admin/oauth-clients/getall': { body: (ck) => ({ customerKey: ck }) },
  '/admin/audit/getall': { body: (ck) => ({ customerKey: ck, limit: 10 }) },
  '/admin/users/passkeys/getall': { body: (ck, f) => ({ customerKey: ck, username: f.username }) },
  '/admin/webhooks/getall': { body: (ck) => ({ customerKey: ck }) },
  '/admin/scim-tokens/getall': { body: (ck) => ({ customerKey: ck }) },
};

/** The admin API's routes as the served document lists them ("/admin/…" and "/auth/…", without /api). */
async function adminRoutes(env: TestApp): Promise<string[]> {
  const response = await env.identity.inject({ method: 'GET', url: '/api/openapi.json' });
  assert.equal(response.statusCode, 200);
  return Object.keys(response.json().paths as Record<string, unknown>)
    .filter((path) => path.startsWith('/api/'))
    .map((path) => path.slice('/api'.length));
}

async function allEvents(env: TestApp): Promise<AuditEvent[]> {
  return (await readAllPages(env.admin, env.customer.customerKey, { limit: 500 })).reverse();
}

describeEachStore('audit events of the admin API', (kind) => {
  test('every route that writes writes exactly its documented events (actor api, ip, request id); every read writes none; no route is in neither table', async (t) => {
    const env = await build(t, kind);
    const ck = Number(env.customer.customerKey);
    const routes = await adminRoutes(env);
    const unlisted = routes.filter((path) => !(path in WRITES) && !(path in READS));
    assert.deepEqual(unlisted, [], 'admin routes with no case in the events table');
    for (const path of [...Object.keys(WRITES), ...Object.keys(READS)]) assert.ok(routes.includes(path), `${path} is not an admin route any more`);

    for (const [path, c] of Object.entries(WRITES)) {
      const fixture = await c.setup?.(env, ck) ?? {};
      const before = new Set((await allEvents(env)).map((e) => e.eventId));
      const response = await env.admin.post(path, c.body(ck, fixture));
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
      const written = (await allEvents(env)).filter((e) => !before.has(e.eventId));
      const expected = await c.events(env, fixture);
      assert.deepEqual(written.map((e) => ({ action: e.action, target: e.target })), expected, path);
      for (const event of written) {
        assert.deepEqual(event.actor, { type: 'api', id: env.customer.customerKey }, path);
        assert.equal(event.ip, '127.0.0.1', path);
        assert.equal(event.requestId, response.headers['x-request-id'], path);
      }
    }

    const f = await newUser(env);
    const before = (await allEvents(env)).length;
    for (const [path, read] of Object.entries(READS)) {
      const response = read.method === 'GET' ? await env.admin.get(`${path}?customerKey=${ck}`) : await env.admin.post(path, read.body!(ck, f));
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
    }
    assert.equal((await allEvents(env)).length, before, 'a read route wrote an event');
  });

  test('an update, disable, enable, group or application update that changes nothing writes no event; a refused write none', async (t) => {
    const env = await build(t, kind);
    const ck = Number(env.customer.customerKey);
    const user = await newUser(env);
    const groupName = name('Group ');
    await env.composition.services.groups.upsert(env.customer.customerId, [{ name: groupName, isDefault: false, attributes: { groupAttribute1: 'x' } }], SYSTEM);
    const application = await jwtApplication(env);
    const before = (await allEvents(env)).length;
    const calls: [string, Record<string, unknown>][] = [
      ['/admin/users/update', { customerKey: ck, username: user.username, firstName: 'Ada', lastName: 'Lovelace' }],
      ['/admin/users/update', { customerKey: ck, username: user.username, groups: [{ name: 'DEFAULT', attributes: [] }] }],
      ['/admin/users/enable', { customerKey: ck, username: user.username }],
      ['/admin/groups/update', { customerKey: ck, groups: [{ groupName, isDefault: false, groupAttributes: [{ name: 'groupAttribute1', value: 'x' }] }] }],
      ['/admin/groups/members/update', { customerKey: ck, groupName: 'DEFAULT', users: [{ primaryEmail: user.email }] }],
    ];
    for (const [path, body] of calls) {
      const response = await env.admin.post(path, body);
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
    }
    await env.composition.services.applications.update(env.customer.customerId, application.uuid, {
      name: application.name, returnUrls: application.returnUrls, redirectUris: [], loginUrls: [],
    }, SYSTEM);
    // Refused: nothing changed, nothing recorded.
    for (const [path, body] of [
      ['/admin/users/update', { customerKey: ck, username: user.username, email: 'not an e-mail' }],
      ['/admin/users/delete', { customerKey: ck, username: 'nobody-here' }],
      ['/admin/policies/create', { customerKey: ck, applicationUuid: '00000000-0000-4000-8000-000000000000', firstFactor: 'PASSWORD' }],
    ] as const) {
      const response = await env.admin.post(path, body);
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${path}: ${response.statusCode}`);
    }
    assert.deepEqual((await allEvents(env)).slice(before), []);
  });

  test("one user's events, asked with the target type, leave out a group whose id is the same", async (t) => {
    const env = await build(t, kind);
    const user = await newUser(env);
    const { audit } = env.composition.services;
    await env.composition.store.db.transaction().execute((trx) => audit.record(trx, env.customer.customerId, {
      action: 'group.updated', target: { type: 'group', id: String(user.userId), name: 'Same id' },
    }, SYSTEM));
    const all = await audit.list(env.customer.customerId, { limit: 10, targetId: String(user.userId) });
    assert.deepEqual(all.events.map((e) => e.action), ['group.updated', 'user.created']);
    const mine = await audit.list(env.customer.customerId, { limit: 10, targetId: String(user.userId), targetType: 'user' });
    assert.deepEqual(mine.events.map((e) => ({ action: e.action, target: e.target })), [{ action: 'user.created', target: userOf(user) }]);
  });
});
