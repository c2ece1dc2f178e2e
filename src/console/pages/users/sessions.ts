/**
 * A user's Sessions tab: the live SSO sessions (one per browser that signed in to the customer's
 * applications), each revocable, and all at once; both ask first on a page of their own and answer
 * with a redirect, so a reload repeats nothing. Then the user's site API keys.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SsoSession } from '../../../identity/sso-sessions/types.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { NotFound } from '../../../lib/errors.ts';
import { owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { plural } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage, postButton } from '../../layout.ts';
import { loadUser, noticeOf, tabBody, when } from './shared.ts';

function sessionIdParam(request: FastifyRequest): number {
  const id = (request.params as { sessionId?: string }).sessionId ?? '';
  if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('session');
  return Number(id);
}

export async function sessionRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const { ssoSessions, siteApiKeys } = ctx.services;
  // A session ends at the sooner of its idle limit (pushed on by each use) and its absolute end.
  const endsAt = (s: SsoSession) => Math.min(s.expiresAt, s.lastSeenAt + ssoSessions.limits.idleMs);
  const browserOf = (s: SsoSession) => s.userAgent || 'Unknown browser';
  const tabUrl = (user: UserWithGroups) => `${ctx.root}/users/${user.id}/sessions`;

  app.get('/users/:id/sessions', async (request: FastifyRequest, reply: FastifyReply) => {
    const user = await loadUser(ctx, request);
    const { customerId } = owner(request);
    const [sessions, keys] = await Promise.all([ssoSessions.listForUser(customerId, user.id), siteApiKeys.list(customerId, { userId: user.id })]);
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', user.username, tabBody(ctx, user, 'sessions', html`
<h2>Sessions</h2>
<h3>Sign-in sessions</h3>
<p>A browser that signed in to this customer's applications keeps a session: the next application signs the user in without asking again.
Revoking one makes that browser sign in again at its next request.</p>
${sessions.length === 0 ? html`<p>No active sessions.</p>` : html`
<p>${user.username} has ${plural(sessions.length, 'active session')}.</p>
<table id="sso-sessions">
<thead><tr><th scope="col">Browser</th><th scope="col">Address</th><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col">Ends</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${sessions.map((s) => html`<tr><td>${browserOf(s)}</td><td>${s.address}</td><td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td><td>${when(endsAt(s))}</td>
<td><form method="get" action="${ctx.root}/users/${user.id}/sessions/${s.id}/revoke"><button type="submit" class="secondary">Revoke</button></form></td></tr>`)}</tbody>
</table>
<form method="get" action="${ctx.root}/users/${user.id}/sessions/revoke" class="actions"><button type="submit" class="danger">Revoke all sessions</button></form>`}
<h3>Site API keys</h3>
<p>A sign-in on the content site gives a JWT that the server does not keep, so it cannot be listed one by one:
disabling the user or setting their password ends every one of them at once.</p>
${keys.length === 0 ? html`<p>${user.username} has no site API keys.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th></tr></thead>
<tbody>${keys.map((k) => html`<tr><td>${k.name}</td><td>${when(k.createdAt)}</td><td>${k.expiresAt ? when(k.expiresAt) : 'Never'}</td><td>${k.revokedAt ? `Revoked ${when(k.revokedAt)}` : 'Active'}</td></tr>`)}</tbody>
</table>`}
<p class="muted">Keys are created and revoked on the <a href="${ctx.root}/site">Site</a> page.</p>`), noticeOf(request)));
  });

  // Revoke all: asks first.
  app.get('/users/:id/sessions/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const count = (await ssoSessions.listForUser(owner(request).customerId, user.id)).length;
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', `Revoke all of ${user.username}'s sessions?`, html`
<p>${count === 0 ? html`<strong>${user.username}</strong> has no active session now.` : html`Each of the ${plural(count, 'browser')} where <strong>${user.username}</strong> is signed in must sign in again at its next request.`}</p>
<div class="actions">${postButton(page, `/users/${user.id}/sessions/revoke`, 'Revoke', { danger: true })}<a href="${tabUrl(user)}">Cancel</a></div>`));
  });

  app.post('/users/:id/sessions/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    await ssoSessions.endAllForUser(owner(request).customerId, user, request.auditContext);
    return reply.redirect(`${tabUrl(user)}?done=sessions-revoked`, 303);
  });

  // Revoke one: asks first, naming the browser; a session that ended meanwhile is said, not an error.
  app.get('/users/:id/sessions/:sessionId/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const id = sessionIdParam(request);
    const session = (await ssoSessions.listForUser(owner(request).customerId, user.id)).find((s) => s.id === id);
    if (!session) return reply.redirect(`${tabUrl(user)}?done=no-session`, 303);
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', `Revoke this session of ${user.username}?`, html`
<dl class="facts">
<dt>Browser</dt><dd>${browserOf(session)}</dd>
<dt>Address</dt><dd>${session.address}</dd>
<dt>Signed in</dt><dd>${when(session.createdAt)}</dd>
<dt>Last seen</dt><dd>${when(session.lastSeenAt)}</dd>
</dl>
<p>That browser must sign in again at its next request; the user's other sessions stay.</p>
<div class="actions">${postButton(page, `/users/${user.id}/sessions/${session.id}/revoke`, 'Revoke', { danger: true })}<a href="${tabUrl(user)}">Cancel</a></div>`));
  });

  app.post('/users/:id/sessions/:sessionId/revoke', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const ended = await ssoSessions.endOne(owner(request).customerId, user, sessionIdParam(request), request.auditContext);
    return reply.redirect(`${tabUrl(user)}?done=${ended ? 'session-revoked' : 'no-session'}`, 303);
  });
}
