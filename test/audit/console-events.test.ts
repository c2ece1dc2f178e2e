/**
 * The console's writing forms, driven over HTTP with the signed-in owner's session and CSRF token (the
 * Chromium context's own request client): each form that changes customer data writes exactly its
 * documented event, with the console actor (the owner's e-mail) and the request's ip. The forms are
 * found in the console's source, so a new form without a case here fails the test.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { APIRequestContext } from 'playwright-core';
import { SYSTEM } from '../../src/audit/context.ts';
import type { AuditEvent, AuditTarget } from '../../src/audit/types.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn, type ConsoleServer } from '../console/browser.ts';
import { ROOT } from '../helpers/paths.ts';

after(closeBrowser);

interface Env { server: ConsoleServer; customerId: number }
interface Fixture { [name: string]: string | number }
interface Case {
  setup?: (env: Env) => Promise<Fixture>;
  /** The path under /console, with the fixture's values. */
  path: (f: Fixture) => string;
  form?: (f: Fixture) => Record<string, string>;
  events: (env: Env, f: Fixture) => Promise<{ action: string; target: AuditTarget }[]>;
}

let counter = 0;
const unique = (prefix: string) => `${prefix}${process.pid}x${++counter}`;

async function newUser(env: Env) {
  const username = unique('cu');
  const user = await env.server.composition.services.users.create(env.customerId, {
    username, email: `${username}@example.test`, firstName: 'Ada', lastName: 'Lovelace', customAttributes: {},
  }, SYSTEM);
  return { userId: user.id, username, email: user.email };
}
const userOf = (f: Fixture): AuditTarget => ({ type: 'user', id: String(f.userId), name: String(f.username) });

async function newGroup(env: Env) {
  const name = unique('cg');
  await env.server.composition.services.groups.upsert(env.customerId, [{ name, isDefault: false, attributes: {} }], SYSTEM);
  const group = await env.server.composition.services.groups.findByName(env.customerId, name);
  return { groupId: group!.id, groupName: name };
}
const groupOf = (f: Fixture): AuditTarget => ({ type: 'group', id: String(f.groupId), name: String(f.groupName) });

async function newApplication(env: Env) {
  const { application } = await env.server.composition.services.applications.create(env.customerId, {
    name: unique('App'), type: 'JWT', returnUrls: ['https://app.example.test/r'], redirectUris: [], loginUrls: [],
  }, SYSTEM);
  return { uuid: application.uuid, name: application.name };
}

/** Console forms (method POST, path as registered) that change customer data. */
const WRITES: Record<string, Case> = {
  '/users/:id/passkeys/:passkeyId/remove': {
    setup: async (env) => {
      const user = await newUser(env);
      const { insertPasskey } = await import('../../src/identity/passkeys/repo.ts');
      const passkey = await insertPasskey(env.server.composition.store.db, {
        customerId: env.customerId, userId: user.userId, credentialId: unique('cred'), publicKey: 'AAAA', counter: 0,
        transports: [], deviceType: 'singleDevice', backedUp: false, name: 'Laptop', createdAt: env.server.clock.now(), lastUsedAt: null,
      });
      return { ...user, passkeyId: passkey.id };
    },
    path: (f) => `/users/${f.userId}/passkeys/${f.passkeyId}/remove`,
    events: async (_env, f) => [{ action: 'user.passkey.removed', target: userOf(f) }],
  },
  '/webhooks': {
    setup: async () => ({ url: `https://hooks.example.test/${unique('h')}` }),
    path: () => '/webhooks',
    form: (f) => ({ url: String(f.url), events: 'user.' }),
    events: async (env, f) => {
      const webhook = (await env.server.composition.services.webhooks.list(env.customerId)).find((w) => w.url === f.url)!;
      return [{ action: 'webhook.created', target: { type: 'webhook', id: webhook.webhookId, name: String(f.url) } }];
    },
  },
  '/scim': {
    setup: async () => ({ name: unique('Okta') }),
    path: () => '/scim',
    form: (f) => ({ name: String(f.name) }),
    events: async (env, f) => {
      const token = (await env.server.composition.services.scimTokens.list(env.customerId)).find((s) => s.name === f.name)!;
      return [{ action: 'scimtoken.created', target: { type: 'scimtoken', id: token.tokenId, name: String(f.name) } }];
    },
  },
  '/scim/tokens/:tokenId/delete': {
    setup: async (env) => {
      const { scimToken } = await env.server.composition.services.scimTokens.create(env.customerId, unique('Entra'), SYSTEM);
      return { tokenId: scimToken.tokenId, name: scimToken.name };
    },
    path: (f) => `/scim/tokens/${f.tokenId}/delete`,
    events: async (_env, f) => [{ action: 'scimtoken.deleted', target: { type: 'scimtoken', id: String(f.tokenId), name: String(f.name) } }],
  },
  '/webhooks/:webhookId/delete': {
    setup: async (env) => {
      const url = `https://hooks.example.test/${unique('h')}`;
      const { webhook } = await env.server.composition.services.webhooks.create(env.customerId, { url, events: ['user.'] }, SYSTEM);
      return { webhookId: webhook.webhookId, url };
    },
    path: (f) => `/webhooks/${f.webhookId}/delete`,
    events: async (_env, f) => [{ action: 'webhook.deleted', target: { type: 'webhook', id: String(f.webhookId), name: String(f.url) } }],
  },
  '/users/new': {
    setup: async () => ({ username: unique('cn') }),
    path: () => '/users/new',
    form: (f) => ({ username: String(f.username), email: `${f.username}@example.test`, firstName: 'N', lastName: 'C', password: 'a long enough password' }),
    events: async (env, f) => {
      const user = await env.server.composition.services.users.findByLogin(env.customerId, String(f.username));
      return [{ action: 'user.created', target: { type: 'user', id: String(user!.id), name: String(f.username) } }];
    },
  },
  '/users/:id/edit': {
    setup: newUser, path: (f) => `/users/${f.userId}/edit`,
    form: (f) => ({ email: String(f.email), firstName: 'Grace', lastName: 'Lovelace', phone: '', alternateEmail: '', customAttributes: '' }),
    events: async (_env, f) => [{ action: 'user.updated', target: userOf(f) }],
  },
  '/users/:id/${action}': {
    // disable here; enable is the same route with the other word, below.
    setup: newUser, path: (f) => `/users/${f.userId}/disable`,
    events: async (_env, f) => [{ action: 'user.disabled', target: userOf(f) }],
  },
  '/users/:id/${action} (enable)': {
    setup: async (env) => {
      const user = await newUser(env);
      await env.server.composition.services.users.setDisabled(env.customerId, user.username, true, SYSTEM);
      return user;
    },
    path: (f) => `/users/${f.userId}/enable`,
    events: async (_env, f) => [{ action: 'user.enabled', target: userOf(f) }],
  },
  '/users/:id/password': {
    setup: newUser, path: (f) => `/users/${f.userId}/password`,
    form: () => ({ newPassword: 'another long password', confirmPassword: 'another long password' }),
    events: async (_env, f) => [{ action: 'user.password.changed', target: userOf(f) }],
  },
  '/users/:id/reset-mfa': {
    setup: async (env) => {
      const user = await newUser(env);
      const { mfa } = env.server.composition.services;
      const { totpAt } = await import('../../src/identity/mfa/totp.ts');
      const { secret } = await mfa.register(env.customerId, { login: user.username, customerDisplayName: 'Test' });
      await mfa.validate(env.customerId, { login: user.username, secret, otp: totpAt(secret, env.server.clock.now()) }, SYSTEM);
      return user;
    },
    path: (f) => `/users/${f.userId}/reset-mfa`,
    events: async (_env, f) => [{ action: 'user.mfa.removed', target: userOf(f) }],
  },
  '/users/:id/delete': {
    setup: newUser, path: (f) => `/users/${f.userId}/delete`,
    events: async (_env, f) => [{ action: 'user.deleted', target: userOf(f) }],
  },
  '/users/:id/groups': {
    setup: async (env) => ({ ...await newUser(env), ...await newGroup(env) }),
    path: (f) => `/users/${f.userId}/groups`,
    form: (f) => ({ group: String(f.groupName) }),
    events: async (_env, f) => [{ action: 'user.updated', target: userOf(f) }],
  },
  '/users/:id/magic-link': {
    setup: async (env) => {
      const user = await newUser(env);
      const application = await newApplication(env);
      await env.server.composition.services.policies.create(env.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK' }, SYSTEM);
      return { ...user, application: application.uuid };
    },
    path: (f) => `/users/${f.userId}/magic-link`,
    form: (f) => ({ application: String(f.application), redirectUri: 'https://app.example.test/r' }),
    events: async (_env, f) => [{ action: 'magiclink.generated', target: userOf(f) }],
  },
  '/users/:id/magic-link/revoke': {
    setup: async (env) => {
      const user = await newUser(env);
      const application = await newApplication(env);
      await env.server.composition.services.policies.create(env.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK' }, SYSTEM);
      await env.server.composition.services.magicLinks.generate(env.customerId, { username: user.username, applicationUuid: application.uuid, redirectUri: 'https://app.example.test/r' }, 'setup', SYSTEM);
      return user;
    },
    path: (f) => `/users/${f.userId}/magic-link/revoke`,
    events: async (_env, f) => [{ action: 'magiclink.revoked', target: userOf(f) }],
  },
  '/users/:id/sessions/revoke': {
    setup: async (env) => {
      const user = await newUser(env);
      await env.server.composition.services.ssoSessions.open(env.customerId, user.userId, ['pwd'], { userAgent: 'test', address: '127.0.0.1' });
      return user;
    },
    path: (f) => `/users/${f.userId}/sessions/revoke`,
    events: async (_env, f) => [{ action: 'user.sessions.revoked', target: userOf(f) }],
  },
  '/users/:id/sessions/:sessionId/revoke': {
    setup: async (env) => {
      const user = await newUser(env);
      const { session } = await env.server.composition.services.ssoSessions.open(env.customerId, user.userId, ['pwd'], { userAgent: 'test', address: '127.0.0.1' });
      return { ...user, sessionId: session.id };
    },
    path: (f) => `/users/${f.userId}/sessions/${f.sessionId}/revoke`,
    events: async (_env, f) => [{ action: 'user.sessions.revoked', target: userOf(f) }],
  },
  '/groups': {
    setup: async () => ({ groupName: unique('cg') }),
    path: () => '/groups',
    form: (f) => ({ name: String(f.groupName) }),
    events: async (env, f) => {
      const group = await env.server.composition.services.groups.findByName(env.customerId, String(f.groupName));
      return [{ action: 'group.updated', target: { type: 'group', id: String(group!.id), name: String(f.groupName) } }];
    },
  },
  '/groups/:name/rename': {
    setup: async (env) => ({ ...await newGroup(env), newName: unique('cr') }),
    path: (f) => `/groups/${f.groupName}/rename`,
    form: (f) => ({ name: String(f.newName) }),
    events: async (_env, f) => [{ action: 'group.updated', target: { type: 'group', id: String(f.groupId), name: String(f.newName) } }],
  },
  '/groups/:name/default': {
    setup: newGroup, path: (f) => `/groups/${f.groupName}/default`,
    events: async (_env, f) => [{ action: 'group.updated', target: groupOf(f) }],
  },
  '/groups/:name/attributes': {
    setup: newGroup, path: (f) => `/groups/${f.groupName}/attributes`,
    form: () => ({ attributes: 'groupAttribute1=blue' }),
    events: async (_env, f) => [{ action: 'group.updated', target: groupOf(f) }],
  },
  '/groups/:name/members': {
    setup: async (env) => ({ ...await newUser(env), ...await newGroup(env) }),
    path: (f) => `/groups/${f.groupName}/members`,
    form: (f) => ({ user: String(f.email) }),
    events: async (_env, f) => [{ action: 'group.members.updated', target: groupOf(f) }],
  },
  '/groups/:name/members/remove': {
    setup: async (env) => {
      const f = { ...await newUser(env), ...await newGroup(env) };
      await env.server.composition.services.groups.updateMembers(env.customerId, f.groupName, [{ primaryEmail: f.email, remove: false }], SYSTEM);
      return f;
    },
    path: (f) => `/groups/${f.groupName}/members/remove`,
    form: (f) => ({ user: String(f.userId) }),
    events: async (_env, f) => [{ action: 'group.members.updated', target: groupOf(f) }],
  },
  '/groups/:name/delete': {
    setup: newGroup, path: (f) => `/groups/${f.groupName}/delete`,
    events: async (_env, f) => [{ action: 'group.deleted', target: groupOf(f) }],
  },
  '/applications': {
    setup: async () => ({ name: unique('App') }),
    path: () => '/applications',
    form: (f) => ({ name: String(f.name), type: 'JWT', urls: 'https://app.example.test/r' }),
    events: async (env, f) => {
      const application = (await env.server.composition.services.applications.list(env.customerId)).find((a) => a.name === f.name)!;
      return [{ action: 'application.created', target: { type: 'application', id: application.uuid, name: String(f.name) } }];
    },
  },
  '/applications/:uuid/edit': {
    setup: newApplication, path: (f) => `/applications/${f.uuid}/edit`,
    form: () => ({ name: 'Renamed app', returnUrls: 'https://app.example.test/r' }),
    events: async (_env, f) => [{ action: 'application.updated', target: { type: 'application', id: String(f.uuid), name: 'Renamed app' } }],
  },
  '/applications/:uuid/policies': {
    setup: newApplication, path: (f) => `/applications/${f.uuid}/policies`,
    form: () => ({ firstFactor: 'PASSWORD', secondFactor: 'NONE', group: '' }),
    events: async (env, f) => {
      const policy = (await env.server.composition.services.policies.list(env.customerId)).find((p) => p.applicationUuid === f.uuid)!;
      return [{ action: 'policy.created', target: { type: 'policy', id: String(policy.id), name: '' } }];
    },
  },
  '/applications/:uuid/policies/:id/delete': {
    setup: async (env) => {
      const application = await newApplication(env);
      const policy = await env.server.composition.services.policies.create(env.customerId, { applicationUuid: application.uuid, firstFactor: 'PASSWORD' }, SYSTEM);
      return { ...application, policyId: policy.id };
    },
    path: (f) => `/applications/${f.uuid}/policies/${f.policyId}/delete`,
    events: async (_env, f) => [{ action: 'policy.deleted', target: { type: 'policy', id: String(f.policyId), name: '' } }],
  },
  '/applications/:uuid/delete': {
    setup: newApplication, path: (f) => `/applications/${f.uuid}/delete`,
    events: async (_env, f) => [{ action: 'application.deleted', target: { type: 'application', id: String(f.uuid), name: String(f.name) } }],
  },
  '/oauth-clients': {
    setup: async () => ({ name: unique('Client') }),
    path: () => '/oauth-clients',
    form: (f) => ({ name: String(f.name) }),
    events: async (env, f) => {
      const client = (await env.server.composition.services.oauthClients.list(env.customerId)).find((c) => c.name === f.name)!;
      return [{ action: 'oauthclient.created', target: { type: 'oauthclient', id: client.clientId, name: String(f.name) } }];
    },
  },
  '/oauth-clients/:clientId/delete': {
    setup: async (env) => {
      const { client } = await env.server.composition.services.oauthClients.create(env.customerId, { name: unique('Client') }, SYSTEM);
      return { clientId: client.clientId, name: client.name };
    },
    path: (f) => `/oauth-clients/${f.clientId}/delete`,
    events: async (_env, f) => [{ action: 'oauthclient.deleted', target: { type: 'oauthclient', id: String(f.clientId), name: String(f.name) } }],
  },
  '/site/api-keys': {
    setup: async (env) => ({ ...await newUser(env), name: unique('key') }),
    path: () => '/site/api-keys',
    form: (f) => ({ login: String(f.username), name: String(f.name) }),
    events: async (env, f) => {
      const key = (await env.server.composition.services.siteApiKeys.list(env.customerId)).find((k) => k.name === f.name)!;
      return [{ action: 'apikey.created', target: { type: 'apikey', id: String(key.id), name: String(f.name) } }];
    },
  },
  '/site/api-keys/:id/revoke': {
    setup: async (env) => {
      const user = await newUser(env);
      const { id } = await env.server.composition.services.siteApiKeys.create(env.customerId, { login: user.username, name: 'to revoke' }, SYSTEM);
      return { keyId: id };
    },
    path: (f) => `/site/api-keys/${f.keyId}/revoke`,
    events: async (_env, f) => [{ action: 'apikey.revoked', target: { type: 'apikey', id: String(f.keyId), name: 'to revoke' } }],
  },
};

/** Console POST routes that write no customer data (the owner's own sign-in and account, a reveal) or no action names. */
const WITHOUT_EVENTS = new Set([
  '/first-sign-in/:token', '/sign-in', '/sign-in/code', '/sign-out',
  '/account/api-key', '/account/authenticator', '/account/authenticator/confirm', '/account/authenticator/remove',
  '/account/passkeys/options', '/account/passkeys', '/account/passkeys/:passkeyId/remove', '/sign-in/passkey/options', '/sign-in/passkey',
  // A resend delivers an event again: it changes nothing an event would name.
  '/webhooks/:webhookId/deliveries/:deliveryId/resend',
  // The site's settings: no audit action exists for them (docs/audit-and-webhooks.md).
  '/site/settings',
  // Rotating the key makes this test's signed client stale: asserted by the CLI test (customer.apikey.rotated).
  '/account/api-key/rotate',
]);

/** Every app.post('…') in the console's source. */
function consolePostRoutes(): string[] {
  const root = join(ROOT, 'src/console/');
  const routes: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/app\.post(?:<[^>]*>)?\(\s*[`'"]([^`'"]+)[`'"]/g)) routes.push(match[1]!);
      }
    }
  };
  walk(root);
  return routes;
}

async function csrfToken(request: APIRequestContext, url: string): Promise<string> {
  const page = await request.get(`${url}/console/users/new`);
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  assert.ok(token, 'a console form carries its CSRF token');
  return token;
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('console events', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console events', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('audit events of the console', (kind) => {
    test('every console form that writes writes exactly its documented event, as the console owner; no form is in neither table', async (t) => {
      const server = await consoleServer(t, kind);
      const routes = consolePostRoutes();
      const covered = new Set(Object.keys(WRITES).map((key) => key.replace(/ \(.*\)$/, '')));
      assert.deepEqual(routes.filter((route) => !covered.has(route) && !WITHOUT_EVENTS.has(route)), [], 'console forms with no case');

      const page = await (await browser(t)).newPage();
      await signIn(page, server);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      const request = page.context().request;
      const _csrf = await csrfToken(request, server.url);
      const env: Env = { server, customerId: server.customer.customerId };
      const audit = server.composition.services.audit;
      const all = async (): Promise<AuditEvent[]> => {
        const events: AuditEvent[] = [];
        for (let cursor = ''; ;) {
          const next = await audit.list(env.customerId, { limit: 500, cursor });
          events.push(...next.events);
          if (!next.nextCursor) return events.reverse();
          cursor = next.nextCursor;
        }
      };

      for (const [name, c] of Object.entries(WRITES)) {
        const fixture = await c.setup?.(env) ?? {};
        const before = new Set((await all()).map((e) => e.eventId));
        const response = await request.post(`${server.url}/console${c.path(fixture)}`, { form: { _csrf, ...c.form?.(fixture) }, maxRedirects: 0 });
        assert.ok(response.status() === 303 || response.status() === 200, `${name}: ${response.status()} ${(await response.text()).slice(0, 300)}`);
        // A refused form answers 303 too, back to the form that shows why: the page it leads to has no error.
        const shown = response.status() === 303 ? await (await request.get(new URL(response.headers().location!, server.url).href)).text() : await response.text();
        assert.doesNotMatch(shown, /class="error"|role="alert"/, `${name}: refused: ${/class="error"[^<]*<[^>]*>?[^<]*|role="alert"[^<]*<?[^<]*/.exec(shown)?.[0]}`);
        const written = (await all()).filter((e) => !before.has(e.eventId));
        assert.deepEqual(written.map((e) => ({ action: e.action, target: e.target })), await c.events(env, fixture), name);
        for (const event of written) {
          assert.deepEqual(event.actor, { type: 'console', id: server.email }, name);
          assert.equal(event.ip, '127.0.0.1', name);
        }
      }
    });
  });
}
