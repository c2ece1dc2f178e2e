/**
 * Groups: the list (search by any part of the name, pages of 50 with the total) and create; each
 * group's page (groups/group-page.ts): rename, make default, delete after a confirmation page,
 * attributes, and members (add by searching users, remove). Every write answers with a redirect.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GROUP_NAME } from '../../identity/groups/rules.ts';
import { Conflict, Invalid } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { consolePage, csrfField, type Notice } from '../layout.ts';
import { errorNotices, fieldError, fieldState, plural, REQUIRED, type FieldErrors } from '../forms.ts';
import { groupNameError, groupPageRoutes, groupUrl } from './groups/group-page.ts';

const PAGE_SIZE = 50;

export function groupRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { groups } = ctx.services;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; errors?: FieldErrors; name?: string } = {}) => {
      const page = pageContext(ctx, request, reply);
      const text = query(request, 'q').trim();
      const number = Math.max(1, Number(/^[0-9]{1,6}$/.test(query(request, 'page')) ? query(request, 'page') : 1));
      const { items, total } = await groups.search(owner(request).customerId, { text, offset: (number - 1) * PAGE_SIZE, limit: PAGE_SIZE });
      const errors = opts.errors ?? {};
      const link = (n: number) => `${ctx.root}/groups?${new URLSearchParams({ ...(text ? { q: text } : {}), page: String(n) })}`;
      const first = (number - 1) * PAGE_SIZE + 1;
      const notices: Notice[] = query(request, 'done') === 'deleted' ? [{ kind: 'notice', text: 'Group deleted.' }] : [];
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'groups', 'Groups', html`
<form method="get" action="${ctx.root}/groups" class="inline" role="search">
<div><label for="group-search">Search groups</label><input id="group-search" name="q" type="search" value="${text}" placeholder="Part of a group name"></div>
<button type="submit" class="secondary">Search</button>
</form>
${items.length === 0 ? html`<p>${text ? `No group name contains "${text}".` : 'No groups on this page.'}</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Members</th><th scope="col">Default</th></tr></thead>
<tbody>${items.map((g) => html`<tr><td><a href="${ctx.root}${groupUrl(g)}">${g.name}</a></td><td>${plural(g.memberCount, 'member')}</td><td>${g.isDefault ? 'Default' : ''}</td></tr>`)}</tbody>
</table>`}
<p>${items.length === 0 ? plural(total, 'group') : html`Showing ${first}–${first + items.length - 1} of ${plural(total, 'group')}`}${text ? ` whose name contains "${text}"` : ''}.</p>
<nav class="pager" aria-label="Pages">${number > 1 ? html`<a rel="prev" href="${link(number - 1)}">Previous page</a>` : ''}${first + items.length - 1 < total ? html`<a rel="next" href="${link(number + 1)}">Next page</a>` : ''}</nav>
<h2>Create group</h2>
<form method="post" action="${ctx.root}/groups" class="inline">
${csrfField(page)}
<div><label for="name">Group name${REQUIRED}</label><input id="name" name="name" type="text" required maxlength="${GROUP_NAME.maxLength}" value="${opts.name ?? ''}"${fieldState(errors, 'name')}>${fieldError(errors, 'name')}</div>
<button type="submit">Create group</button>
</form>`, [...notices, ...errorNotices(errors)]));
    };

    app.get('/groups', async (request, reply) => listPage(request, reply));

    app.post('/groups', async (request, reply) => {
      const name = field(request.body, 'name');
      const customerId = owner(request).customerId;
      try {
        if (!name) throw new Invalid('groupName', 'is required');
        if (await groups.findByName(customerId, name)) throw new Conflict('group_exists', { field: 'groupName' }, `a group named ${name} already exists`);
        await groups.upsert(customerId, [{ name, isDefault: false, attributes: {} }], request.auditContext);
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return listPage(request, reply, { status: 400, errors: { name: groupNameError(error) }, name });
        throw error;
      }
      return reply.redirect(`${ctx.root}/groups/${encodeURIComponent(name)}?done=created`, 303);
    });

    await app.register(groupPageRoutes(ctx));
  };
}
