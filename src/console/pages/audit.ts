/**
 * The audit log page: the customer's events newest first, 50 a page, filtered by an action prefix and
 * a user (username, e-mail or user id; each user's page links here with its username); "Older events"
 * follows the service's cursor, so events arriving meanwhile never shift the pages. Read only.
 */
import type { FastifyInstance } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import type { AuditEvent } from '../../audit/types.ts';
import { owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { consolePage, type Notice } from '../layout.ts';
import { when } from './users/shared.ts';

const PAGE_SIZE = 50;
const MAX_FILTER = 254;

const actorText = (event: AuditEvent) => (event.actor.id ? `${event.actor.type} ${event.actor.id}` : event.actor.type);
const targetText = (event: AuditEvent) => `${event.target.type} ${event.target.name || event.target.id}`;

export function auditRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/audit', async (request, reply) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const action = query(request, 'action').trim().slice(0, MAX_FILTER);
      const user = query(request, 'user').trim().slice(0, MAX_FILTER);
      const cursor = query(request, 'cursor');
      const notices: Notice[] = [];
      let status = 200;

      // A user named by login, else (a deleted user, say) by its id.
      const found = user ? await ctx.services.users.findByLogin(me.customerId, user) : undefined;
      const targetId = found ? String(found.id) : /^[0-9]{1,15}$/.test(user) ? user : undefined;
      let events: AuditEvent[] = [];
      let nextCursor = '';
      if (user && targetId === undefined) {
        status = 400;
        notices.push({ kind: 'error', text: `No user “${user}”: give a username, e-mail or user id.` });
      } else {
        try {
          ({ events, nextCursor } = await ctx.services.audit.list(me.customerId, { limit: PAGE_SIZE, cursor, action: action || undefined, targetId, targetType: targetId === undefined ? undefined : 'user' }));
        } catch (error) {
          if (!(error instanceof Invalid)) throw error;
          status = 400;
          notices.push({ kind: 'error', text: error.field === 'action' ? 'Action: give an action or its beginning, e.g. user. or user.created.' : 'That page link is not valid: start from the newest events.' });
        }
      }
      const filters = { ...(action ? { action } : {}), ...(user ? { user } : {}) };
      const older = nextCursor ? `${ctx.root}/audit?${new URLSearchParams({ ...filters, cursor: nextCursor })}` : '';
      const filtered = action || user;

      return sendPage(reply, status, consolePage(page, 'audit', 'Audit log', html`
<p>Every change made through the admin API, the console, the CLI and imports, and every sign-in, newest first. Events cannot be changed or deleted; they are kept for the configured retention.</p>
<form method="get" action="${ctx.root}/audit" class="inline" role="search">
<div><label for="action">Action</label><input id="action" name="action" type="search" value="${action}" maxlength="${MAX_FILTER}" placeholder="e.g. user. or user.created"></div>
<div><label for="user">User</label><input id="user" name="user" type="search" value="${user}" maxlength="${MAX_FILTER}" placeholder="Username, e-mail or user id"></div>
<button type="submit" class="secondary">Filter</button>
${filtered ? html`<a href="${ctx.root}/audit">Clear filters</a>` : ''}
</form>
${events.length === 0 ? html`<p>${status !== 200 ? '' : filtered ? 'No events match these filters.' : cursor ? 'No older events.' : 'No events yet.'}</p>` : html`
<table>
<caption class="muted">${cursor ? 'Older events' : 'Newest events'}${filtered ? ' matching the filters' : ''}</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Action</th><th scope="col">Actor</th><th scope="col">Target</th><th scope="col">IP</th></tr></thead>
<tbody>
${events.map((e) => html`<tr><td>${when(e.time)}</td><td><code>${e.action}</code></td><td>${actorText(e)}</td><td>${targetText(e)}</td><td>${e.ip}</td></tr>`)}
</tbody>
</table>`}
<p class="actions">${cursor ? html`<a href="${ctx.root}/audit${filtered ? `?${new URLSearchParams(filters)}` : ''}">Newest events</a>` : ''}${older ? html` <a href="${older}">Older events</a>` : ''}</p>`, notices));
    });
  };
}
