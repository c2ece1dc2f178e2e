/**
 * Users: search by username or e-mail prefix (keyset pages), create, and each user's page: edit,
 * disable/enable, reset MFA, groups, magic links, delete (after a confirmation page).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Conflict, Invalid, LatchkeyError, NotFound } from '../../lib/errors.ts';
import type { UserWithGroups } from '../../identity/users/types.ts';
import { field, fields, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { searchUsers, type SearchMode } from '../queries.ts';

const PAGE_SIZE = 50;
const NOTICES: Record<string, string> = {
  created: 'User created.',
  saved: 'Changes saved.',
  disabled: 'User disabled: their sign-ins and site credentials stop working.',
  enabled: 'User enabled.',
  'mfa-reset': 'Authenticator removed: the user signs in without a code until they set one up again.',
  'groups-saved': 'Groups saved.',
  'link-sent': 'Magic link generated and queued for e-mail.',
  'links-revoked': 'Open magic links revoked.',
  deleted: 'User deleted.',
};

const idParam = (request: FastifyRequest): number => {
  const id = (request.params as { id?: string }).id ?? '';
  if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('user');
  return Number(id);
};

/** Lines "customAttributeN=value" (the form's textarea) as an attribute map. @throws Invalid */
function parseAttributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq < 1) throw new Invalid('customAttributes', `line "${line.trim()}" must read customAttributeN=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export function userRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { users, groups, mfa, magicLinks, applications } = ctx.services;
    const notice = (request: FastifyRequest): Notice[] => {
      const done = query(request, 'done');
      return NOTICES[done] ? [{ kind: 'notice', text: NOTICES[done] }] : [];
    };

    app.get('/users', async (request, reply) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const q = query(request, 'q').trim().slice(0, 320);
      const after = query(request, 'after').slice(0, 400);
      let mode: SearchMode = !q ? 'all' : q.includes('@') || query(request, 'in') === 'email' ? 'email' : 'username';
      let result = await searchUsers(ctx.db, me.customerId, mode, q, after, PAGE_SIZE);
      // "alice" finds alice@example.com when no username starts with it.
      if (mode === 'username' && !after && result.users.length === 0) {
        mode = 'email';
        result = await searchUsers(ctx.db, me.customerId, mode, q, after, PAGE_SIZE);
      }
      const total = await users.count(me.customerId);
      const nextUrl = result.next && `${ctx.root}/users?${new URLSearchParams({ ...(q ? { q } : {}), ...(mode === 'email' ? { in: 'email' } : {}), after: result.next })}`;
      return sendPage(reply, 200, consolePage(page, 'users', 'Users', html`
<form method="get" action="${ctx.root}/users" class="inline" role="search">
<div><label for="q">Search</label><input id="q" name="q" type="search" value="${q}" placeholder="Username or e-mail starts with…"></div>
<button type="submit" class="secondary">Search</button>
</form>
<form method="get" action="${ctx.root}/users/new" class="actions"><button type="submit">Create user</button></form>
<p class="muted">${q ? `Users whose ${mode === 'email' ? 'e-mail' : 'username'} starts with “${q}”` : `${total} users`}${after ? ' (continued)' : ''}.</p>
${result.users.length === 0 ? html`<p>No users found.</p>` : html`
<table>
<caption class="muted">Users</caption>
<thead><tr><th scope="col">Username</th><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Status</th></tr></thead>
<tbody>
${result.users.map((u) => html`<tr><td><a href="${ctx.root}/users/${u.id}">${u.username}</a></td><td>${u.email}</td><td>${u.name}</td><td>${u.isDisabled ? 'Disabled' : 'Active'}</td></tr>`)}
</tbody>
</table>`}
<nav class="pager" aria-label="Pages">${after ? html`<a href="${ctx.root}/users${q ? `?q=${encodeURIComponent(q)}` : ''}">First page</a>` : ''}${nextUrl ? html`<a href="${nextUrl}" rel="next">Next page</a>` : ''}</nav>
`, notice(request)));
    });

    const createForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: Record<string, string>, notices?: Notice[]) => {
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, status, consolePage(page, 'users', 'Create user', html`
<form method="post" action="${ctx.root}/users/new">
${csrfField(page)}
<label for="username">Username</label>
<input id="username" name="username" type="text" required maxlength="255" autocomplete="off" value="${values.username ?? ''}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" required maxlength="320" autocomplete="off" value="${values.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" aria-describedby="password-help">
<p id="password-help" class="muted">8 to 128 characters. Leave empty for a user who signs in by magic link only.</p>
<label for="firstName">First name</label>
<input id="firstName" name="firstName" type="text" maxlength="255" value="${values.firstName ?? ''}">
<label for="lastName">Last name</label>
<input id="lastName" name="lastName" type="text" maxlength="255" value="${values.lastName ?? ''}">
<div class="actions"><button type="submit">Create</button> <a href="${ctx.root}/users">Cancel</a></div>
</form>`, notices));
    };

    app.get('/users/new', async (request, reply) => createForm(request, reply, 200, {}));

    app.post('/users/new', async (request, reply) => {
      const values = Object.fromEntries(['username', 'email', 'firstName', 'lastName'].map((k) => [k, field(request.body, k)]));
      const raw = (request.body as Record<string, unknown> | undefined)?.password;
      const password = typeof raw === 'string' && raw !== '' ? raw : undefined;
      try {
        const user = await users.create(owner(request).customerId, {
          username: values.username!, email: values.email, firstName: values.firstName, lastName: values.lastName,
          password, customAttributes: {},
        });
        return reply.redirect(`${ctx.root}/users/${user.id}?done=created`, 303);
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return createForm(request, reply, error instanceof Invalid ? 400 : 409, values, [{ kind: 'error', text: error.message }]);
        throw error;
      }
    });

    const load = async (request: FastifyRequest): Promise<UserWithGroups> => {
      const user = await users.findByIdWithGroups(owner(request).customerId, idParam(request));
      if (!user || user.markForDeletion) throw new NotFound('user');
      return user;
    };

    const userPage = async (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, status = 200, notices: Notice[] = notice(request)) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const [hasMfa, allGroups, apps] = await Promise.all([
        mfa.hasActiveAuthenticator(me.customerId, user.id),
        groups.list(me.customerId, 1, 500),
        applications.list(me.customerId),
      ]);
      const member = new Set(user.groups.map((g) => g.toLowerCase()));
      const base = `/users/${user.id}`;
      const attributes = Object.entries(user.customAttributes).map(([k, v]) => `${k}=${v}`).join('\n');
      return sendPage(reply, status, consolePage(page, 'users', user.username, html`
<dl class="facts">
<dt>Username</dt><dd>${user.username}</dd>
<dt>E-mail</dt><dd>${user.email}</dd>
<dt>Status</dt><dd id="status">${user.isDisabled ? 'Disabled' : 'Active'}</dd>
<dt>Second factor</dt><dd>${hasMfa ? 'Authenticator app' : 'None'}</dd>
<dt>Groups</dt><dd>${user.groups.join(', ') || 'None'}</dd>
<dt>Created</dt><dd>${new Date(user.createdAt).toISOString().slice(0, 16).replace('T', ' ')} UTC</dd>
</dl>
<div class="actions">
${user.isDisabled ? postButton(page, `${base}/enable`, 'Enable') : postButton(page, `${base}/disable`, 'Disable', { danger: true })}
${hasMfa ? postButton(page, `${base}/reset-mfa`, 'Reset MFA', { secondary: true }) : ''}
<form method="get" action="${ctx.root}${base}/delete"><button type="submit" class="secondary">Delete user</button></form>
</div>

<h2>Attributes</h2>
<form method="post" action="${ctx.root}${base}/edit">
${csrfField(page)}
<label for="email">E-mail</label><input id="email" name="email" type="email" required value="${user.email}">
<label for="firstName">First name</label><input id="firstName" name="firstName" type="text" value="${user.firstName}">
<label for="lastName">Last name</label><input id="lastName" name="lastName" type="text" value="${user.lastName}">
<label for="phone">Phone</label><input id="phone" name="phone" type="text" value="${user.phone}">
<label for="alternateEmail">Alternate e-mail</label><input id="alternateEmail" name="alternateEmail" type="email" value="${user.alternateEmail}">
<label for="customAttributes">Custom attributes</label>
<textarea id="customAttributes" name="customAttributes" aria-describedby="attributes-help">${attributes}</textarea>
<p id="attributes-help" class="muted">One per line: customAttribute1=value … customAttribute50=value. Remove a line to clear it.</p>
<div class="actions"><button type="submit">Save</button></div>
</form>

<h2>Groups</h2>
${allGroups.items.length === 0 ? html`<p>No groups yet.</p>` : html`
<form method="post" action="${ctx.root}${base}/groups">
${csrfField(page)}
<fieldset><legend>Member of</legend>
${allGroups.items.map((g, i) => html`<div class="check"><input type="checkbox" id="group-${i}" name="group" value="${g.name}"${member.has(g.name.toLowerCase()) ? html` checked` : ''}><label for="group-${i}">${g.name}</label></div>`)}
</fieldset>
<div class="actions"><button type="submit">Save groups</button></div>
</form>`}

<h2>Magic links</h2>
${apps.length === 0 ? html`<p>Create an application first: a magic link signs the user in to one.</p>` : html`
<form method="post" action="${ctx.root}${base}/magic-link" class="inline">
${csrfField(page)}
<div><label for="application">Application</label><select id="application" name="application">${apps.map((a) => html`<option value="${a.uuid}">${a.name} (${a.type})</option>`)}</select></div>
<div><label for="redirectUri">Redirect URI (optional)</label><input id="redirectUri" name="redirectUri" type="url"></div>
<div><label for="expiryMinutes">Expires after (minutes)</label><input id="expiryMinutes" name="expiryMinutes" type="number" min="1" max="43200" value="1440"></div>
<button type="submit">Generate magic link</button>
</form>`}
<div class="actions">${postButton(page, `${base}/magic-link/revoke`, 'Revoke magic links', { secondary: true })}</div>
`, notices));
    };

    app.get('/users/:id', async (request, reply) => userPage(request, reply, await load(request)));

    for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
      app.post(`/users/:id/${action}`, async (request, reply) => {
        const user = await load(request);
        await users.setDisabled(owner(request).customerId, user.username, disabled);
        return reply.redirect(`${ctx.root}/users/${user.id}?done=${action}d`, 303);
      });
    }

    app.post('/users/:id/reset-mfa', async (request, reply) => {
      const user = await load(request);
      await mfa.reset(owner(request).customerId, user.username);
      return reply.redirect(`${ctx.root}/users/${user.id}?done=mfa-reset`, 303);
    });

    app.post('/users/:id/edit', async (request, reply) => {
      const user = await load(request);
      try {
        const given = parseAttributes(field(request.body, 'customAttributes') ? String((request.body as Record<string, unknown>).customAttributes) : '');
        // The service merges attributes: one removed from the text is cleared explicitly.
        const customAttributes = { ...Object.fromEntries(Object.keys(user.customAttributes).map((k) => [k, ''])), ...given };
        await users.update(owner(request).customerId, {
          username: user.username,
          email: field(request.body, 'email'),
          firstName: field(request.body, 'firstName'),
          lastName: field(request.body, 'lastName'),
          phone: field(request.body, 'phone'),
          alternateEmail: field(request.body, 'alternateEmail'),
          customAttributes,
        });
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return userPage(request, reply, user, 400, [{ kind: 'error', text: error.message }]);
        throw error;
      }
      return reply.redirect(`${ctx.root}/users/${user.id}?done=saved`, 303);
    });

    app.post('/users/:id/groups', async (request, reply) => {
      const user = await load(request);
      try {
        await users.update(owner(request).customerId, {
          username: user.username, customAttributes: {},
          groups: fields(request.body, 'group').map((name) => ({ name, attributes: [] })),
        });
      } catch (error) {
        if (error instanceof Invalid) return userPage(request, reply, user, 400, [{ kind: 'error', text: error.message }]);
        throw error;
      }
      return reply.redirect(`${ctx.root}/users/${user.id}?done=groups-saved`, 303);
    });

    app.post('/users/:id/magic-link', async (request, reply) => {
      const user = await load(request);
      const minutes = Number(field(request.body, 'expiryMinutes') || '1440');
      try {
        await magicLinks.generate(owner(request).customerId, {
          username: user.username,
          applicationUuid: field(request.body, 'application'),
          ...(field(request.body, 'redirectUri') ? { redirectUri: field(request.body, 'redirectUri') } : {}),
          expiryMinutes: Number.isInteger(minutes) ? minutes : undefined,
        }, `console-${randomUUID()}`);
      } catch (error) {
        if (error instanceof LatchkeyError && !(error instanceof NotFound && error.entity === 'user')) {
          return userPage(request, reply, user, 400, [{ kind: 'error', text: error.message }]);
        }
        throw error;
      }
      return reply.redirect(`${ctx.root}/users/${user.id}?done=link-sent`, 303);
    });

    app.post('/users/:id/magic-link/revoke', async (request, reply) => {
      const user = await load(request);
      await magicLinks.revoke(owner(request).customerId, user.username);
      return reply.redirect(`${ctx.root}/users/${user.id}?done=links-revoked`, 303);
    });

    app.get('/users/:id/delete', async (request, reply) => {
      const user = await load(request);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'users', `Delete ${user.username}?`, html`
<p>The user <strong>${user.username}</strong> (${user.email}) is deleted: they can no longer sign in, and their site credentials stop working. This cannot be undone.</p>
<div class="actions">${postButton(page, `/users/${user.id}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/users/${user.id}">Cancel</a></div>`));
    });

    app.post('/users/:id/delete', async (request, reply) => {
      const user = await load(request);
      await users.remove(owner(request).customerId, user.username);
      return reply.redirect(`${ctx.root}/users?done=deleted`, 303);
    });
  };
}
