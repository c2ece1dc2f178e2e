/** A user's other tabs: group memberships, factors and magic links (sessions.ts has the Sessions tab). */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid, LatchkeyError, NotFound } from '../../../lib/errors.ts';
import { EXPIRY_DEFAULT, EXPIRY_MAX, EXPIRY_MIN } from '../../../identity/magic-links/types.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { field, fields, owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { errorsOf, inputField, plural, type FieldErrors } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../../layout.ts';
import { keepRefusedForm, takeRefusedForm } from './refused-form.ts';
import { loadUser, noticeOf, tabBody, when, type Tab } from './shared.ts';

const RECENT_LINKS = 20;

export async function tabRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const { users, groups, mfa, passkeys, magicLinks, applications } = ctx.services;
  const render = (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, tab: Tab, body: (page: ReturnType<typeof pageContext>) => unknown, status = 200, notices: Notice[] = noticeOf(request)) => {
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, status, consolePage(page, 'users', user.username, tabBody(ctx, user, tab, body(page) as never), notices));
  };

  // Group memberships.
  const groupsTab = async (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, status = 200, notices?: Notice[]) => {
    const all = await groups.list(owner(request).customerId, 1, 500);
    const member = new Set(user.groups.map((g) => g.toLowerCase()));
    return render(request, reply, user, 'groups', (page) => html`
<h2>Group memberships</h2>
<p>${user.username} is in ${plural(user.groups.length, 'group')}.</p>
${all.items.length === 0 ? html`<p>No groups yet.</p>` : html`
<form method="post" action="${ctx.root}/users/${user.id}/groups">
${csrfField(page)}
<fieldset><legend>Member of</legend>
${all.items.map((g, i) => html`<div class="check"><input type="checkbox" id="group-${i}" name="group" value="${g.name}"${member.has(g.name.toLowerCase()) ? html` checked` : ''}><label for="group-${i}">${g.name}</label></div>`)}
</fieldset>
<div class="actions"><button type="submit">Save groups</button></div>
</form>`}`, status, notices);
  };
  app.get('/users/:id/groups', async (request, reply) => groupsTab(request, reply, await loadUser(ctx, request)));
  app.post('/users/:id/groups', async (request, reply) => {
    const user = await loadUser(ctx, request);
    try {
      await users.update(owner(request).customerId, {
        username: user.username, customAttributes: {},
        groups: fields(request.body, 'group').map((name) => ({ name, attributes: [] })),
      }, request.auditContext);
    } catch (error) {
      if (error instanceof Invalid || error instanceof NotFound) return groupsTab(request, reply, user, 400, [{ kind: 'error', text: error.message }]);
      throw error;
    }
    return reply.redirect(`${ctx.root}/users/${user.id}/groups?done=groups-saved`, 303);
  });

  // Factors: what the user signs in with.
  app.get('/users/:id/factors', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const customerId = owner(request).customerId;
    const [hasMfa, keys] = await Promise.all([mfa.hasActiveAuthenticator(customerId, user.id), passkeys.list({ customerId, userId: user.id })]);
    return render(request, reply, user, 'factors', (page) => html`
<h2>Factors</h2>
<table>
<thead><tr><th scope="col">Factor</th><th scope="col">State</th><th scope="col">Action</th></tr></thead>
<tbody>
<tr><td>Password</td><td>${!user.hasPassword ? 'Not set' : html`Set${user.passwordChangedAt ? ` ${when(user.passwordChangedAt)}` : ''}${user.passwordChangeRequired ? '; must be changed at the next sign-in' : ''}`}</td>
<td><form method="get" action="${ctx.root}/users/${user.id}/password"><button type="submit" class="secondary">Set password</button></form></td></tr>
<tr><td>Authenticator app</td><td>${hasMfa ? 'Enrolled' : 'Not enrolled'}</td>
<td>${hasMfa ? postButton(page, `/users/${user.id}/reset-mfa`, 'Reset MFA', { secondary: true, fields: { from: 'factors' } }) : html`<span class="muted">The user enrols from their application.</span>`}</td></tr>
</tbody>
</table>
<p class="muted">Reset MFA removes the authenticator: the user signs in without a code until they set one up again.</p>
<h3>Passkeys</h3>
${keys.length === 0 ? html`<p>${user.username} has no passkeys. The user adds them at sign-in or on their account page.</p>` : html`
<table id="passkeys">
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${keys.map((k) => html`<tr><td>${k.name}</td><td>${when(k.createdAt)}</td><td>${k.lastUsedAt === null ? 'Never' : when(k.lastUsedAt)}</td>
<td><form method="get" action="${ctx.root}/users/${user.id}/passkeys/${k.passkeyId}/remove"><button type="submit" class="secondary" aria-label="Remove ${k.name}">Remove</button></form></td></tr>`)}</tbody>
</table>`}`);
  });

  // Magic links: generate one, see the recent ones, revoke the open ones (after asking).
  const linksTab = async (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, status = 200, typed: Record<string, string> = {}, errors: FieldErrors = {}, notices?: Notice[]) => {
    const me = owner(request);
    const [apps, recent] = await Promise.all([applications.list(me.customerId), magicLinks.listRecent(me.customerId, user.id, RECENT_LINKS)]);
    const now = ctx.clock.now();
    const state = (l: (typeof recent)[number]) => l.consumedAt ? `Used ${when(l.consumedAt)}` : l.revokedAt ? `Revoked ${when(l.revokedAt)}` : l.expiresAt <= now ? 'Expired' : 'Open';
    const open = recent.filter((l) => state(l) === 'Open').length;
    return render(request, reply, user, 'magic-links', (page) => html`
<h2>Magic links</h2>
${apps.length === 0 ? html`<p>Create an application first: a magic link signs the user in to one.</p>` : html`
<form method="post" action="${ctx.root}/users/${user.id}/magic-link" novalidate>
${csrfField(page)}
<div class="field${errors.application ? ' invalid' : ''}"><label for="application">Application</label>
${errors.application ? html`<p class="field-error" id="application-error" role="alert">${errors.application}</p>` : ''}
<select id="application" name="application">${apps.map((a) => html`<option value="${a.uuid}"${typed.application === a.uuid ? html` selected` : ''}>${a.name} (${a.type})</option>`)}</select></div>
${inputField({ name: 'redirectUri', label: 'Redirect URI (a JWT application requires one of its return URLs)', type: 'url', value: typed.redirectUri, error: errors.redirectUri })}
${inputField({ name: 'expiryMinutes', label: 'Expires after (minutes)', type: 'number', value: typed.expiryMinutes ?? String(EXPIRY_DEFAULT), error: errors.expiryMinutes,
    extra: html` min="${EXPIRY_MIN}" max="${EXPIRY_MAX}"` })}
<div class="actions"><button type="submit">Generate magic link</button></div>
</form>`}
<h3>Recent links</h3>
${recent.length === 0 ? html`<p>No magic links yet.</p>` : html`
<table>
<thead><tr><th scope="col">Application</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th></tr></thead>
<tbody>${recent.map((l) => html`<tr><td>${l.applicationName}</td><td>${when(l.createdAt)}</td><td>${when(l.expiresAt)}</td><td>${state(l)}</td></tr>`)}</tbody>
</table>
<p class="muted">The latest ${RECENT_LINKS} are shown.</p>`}
${open > 0 ? html`<form method="get" action="${ctx.root}/users/${user.id}/magic-links/revoke" class="actions"><button type="submit" class="danger">Revoke magic links</button></form>` : ''}`,
    status, notices);
  };
  const linksPath = (user: UserWithGroups) => `/users/${user.id}/magic-links`;
  app.get('/users/:id/magic-links', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const refused = takeRefusedForm(ctx, request, reply, linksPath(user));
    return refused ? linksTab(request, reply, user, 200, refused.typed, refused.errors, []) : linksTab(request, reply, user);
  });

  app.post('/users/:id/magic-link', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const typed = { application: field(request.body, 'application'), redirectUri: field(request.body, 'redirectUri'), expiryMinutes: field(request.body, 'expiryMinutes') };
    const minutes = typed.expiryMinutes === '' ? undefined : Number(typed.expiryMinutes);
    const labels = { applicationUuid: 'Application', application: 'Application', redirectUri: 'Redirect URI', expiryMinutes: 'Expires after (minutes)' };
    try {
      if (minutes !== undefined && !Number.isInteger(minutes)) throw new Invalid('expiryMinutes', `must be a whole number of minutes from ${EXPIRY_MIN} to ${EXPIRY_MAX}`);
      await magicLinks.generate(owner(request).customerId, {
        username: user.username,
        applicationUuid: typed.application,
        ...(typed.redirectUri ? { redirectUri: typed.redirectUri } : {}),
        expiryMinutes: minutes,
      }, `console-${randomUUID()}`, request.auditContext);
    } catch (error) {
      if (error instanceof LatchkeyError && !(error instanceof NotFound && error.entity === 'user')) {
        const errors = errorsOf(error, labels, { name: 'application', label: 'Application' })
          ?? { application: error instanceof NotFound ? 'Application not found: pick one from the list.' : error.message };
        if (errors.applicationUuid) errors.application = errors.applicationUuid;
        delete errors.applicationUuid;
        // Post/redirect/get: a reload of the page that shows the errors sends nothing again.
        if (keepRefusedForm(ctx, request, reply, linksPath(user), { typed, errors })) return reply.redirect(`${ctx.root}${linksPath(user)}`, 303);
        return linksTab(request, reply, user, 400, typed, errors, []);
      }
      throw error;
    }
    return reply.redirect(`${ctx.root}/users/${user.id}/magic-links?done=link-sent`, 303);
  });

  app.get('/users/:id/magic-links/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', `Revoke ${user.username}'s magic links?`, html`
<p>Every open magic link of <strong>${user.username}</strong> stops working: a link already sent by e-mail can no longer sign them in.</p>
<div class="actions">${postButton(page, `/users/${user.id}/magic-link/revoke`, 'Revoke', { danger: true })}<a href="${ctx.root}/users/${user.id}/magic-links">Cancel</a></div>`));
  });

  app.post('/users/:id/magic-link/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    let done = 'links-revoked';
    try {
      await magicLinks.revoke(owner(request).customerId, user.username, request.auditContext);
    } catch (error) {
      // Nothing open (used or revoked meanwhile, or the form sent twice): said, not an error page.
      if (!(error instanceof NotFound)) throw error;
      done = 'no-links';
    }
    return reply.redirect(`${ctx.root}/users/${user.id}/magic-links?done=${done}`, 303);
  });
}
