/** Groups: list and create, and each group's page: attributes, members (keyset pages), add and remove. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Group } from '../../identity/groups/types.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { groupMembers } from '../queries.ts';

const MAX_GROUPS = 1000;
const NOTICES: Record<string, string> = {
  created: 'Group created.', saved: 'Attributes saved.', added: 'Member added.', removed: 'Member removed.',
};

function parseAttributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq < 1) throw new Invalid('attributes', `line "${line.trim()}" must read groupAttributeN=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export function groupRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { groups } = ctx.services;
    const notices = (request: FastifyRequest): Notice[] => {
      const done = query(request, 'done');
      return NOTICES[done] ? [{ kind: 'notice', text: NOTICES[done] }] : [];
    };
    const all = async (customerId: number): Promise<Group[]> => (await groups.list(customerId, 1, MAX_GROUPS)).items;
    const load = async (request: FastifyRequest): Promise<Group> => {
      const name = (request.params as { name: string }).name;
      const group = (await all(owner(request).customerId)).find((g) => g.name.toLowerCase() === name.toLowerCase());
      if (!group) throw new NotFound('group');
      return group;
    };
    const groupUrl = (group: Group) => `/groups/${encodeURIComponent(group.name)}`;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, status = 200, list: Notice[] = notices(request), name = '') => {
      const page = pageContext(ctx, request, reply);
      const items = await all(owner(request).customerId);
      return sendPage(reply, status, consolePage(page, 'groups', 'Groups', html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Members</th><th scope="col">Default</th></tr></thead>
<tbody>${items.map((g) => html`<tr><td><a href="${ctx.root}${groupUrl(g)}">${g.name}</a></td><td>${g.memberCount}</td><td>${g.isDefault ? 'Yes' : ''}</td></tr>`)}</tbody>
</table>
<h2>Create group</h2>
<form method="post" action="${ctx.root}/groups" class="inline">
${csrfField(page)}
<div><label for="name">Group name</label><input id="name" name="name" type="text" required maxlength="255" value="${name}"></div>
<button type="submit">Create group</button>
</form>`, list));
    };

    app.get('/groups', async (request, reply) => listPage(request, reply));

    app.post('/groups', async (request, reply) => {
      const name = field(request.body, 'name');
      const customerId = owner(request).customerId;
      try {
        if (!name) throw new Invalid('name', 'is required');
        if ((await all(customerId)).some((g) => g.name.toLowerCase() === name.toLowerCase())) throw new Conflict('group_exists', { field: 'name' }, `a group named ${name} already exists`);
        await groups.upsert(customerId, [{ name, isDefault: false, attributes: {} }]);
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return listPage(request, reply, 400, [{ kind: 'error', text: error.message }], name);
        throw error;
      }
      return reply.redirect(`${ctx.root}/groups/${encodeURIComponent(name)}?done=created`, 303);
    });

    const groupPage = async (request: FastifyRequest, reply: FastifyReply, group: Group, status = 200, list: Notice[] = notices(request)) => {
      const page = pageContext(ctx, request, reply);
      const after = Number(/^[0-9]{1,15}$/.test(query(request, 'after')) ? query(request, 'after') : 0);
      const { members, next } = await groupMembers(ctx.db, owner(request).customerId, group.id, after, 50);
      const url = groupUrl(group);
      return sendPage(reply, status, consolePage(page, 'groups', group.name, html`
<p>${group.memberCount} members${group.isDefault ? html` · <strong>default group</strong> (new users join it)` : ''}.</p>
<h2>Attributes</h2>
<form method="post" action="${ctx.root}${url}/attributes">
${csrfField(page)}
<label for="attributes">Group attributes</label>
<textarea id="attributes" name="attributes" aria-describedby="attributes-help">${Object.entries(group.attributes).map(([k, v]) => `${k}=${v}`).join('\n')}</textarea>
<p id="attributes-help" class="muted">One per line: groupAttribute1=value … groupAttribute50=value.</p>
<div class="actions"><button type="submit">Save attributes</button></div>
</form>
<h2>Members</h2>
<form method="post" action="${ctx.root}${url}/members" class="inline">
${csrfField(page)}
<div><label for="member-email">Member e-mail</label><input id="member-email" name="email" type="email" required></div>
<button type="submit">Add member</button>
</form>
${members.length === 0 ? html`<p>No members${after ? ' on this page' : ''}.</p>` : html`
<table>
<thead><tr><th scope="col">Username</th><th scope="col">E-mail</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${members.map((m) => html`<tr><td><a href="${ctx.root}/users/${m.id}">${m.username}</a></td><td>${m.email}</td><td>${postButton(page, `${url}/members/remove`, `Remove ${m.username}`, { secondary: true, fields: { email: m.email } })}</td></tr>`)}</tbody>
</table>`}
<nav class="pager" aria-label="Pages">${after ? html`<a href="${ctx.root}${url}">First page</a>` : ''}${next !== undefined ? html`<a rel="next" href="${ctx.root}${url}?after=${next}">Next page</a>` : ''}</nav>
`, list));
    };

    app.get('/groups/:name', async (request, reply) => groupPage(request, reply, await load(request)));

    app.post('/groups/:name/attributes', async (request, reply) => {
      const group = await load(request);
      try {
        const text = (request.body as Record<string, unknown> | undefined)?.attributes;
        await groups.upsert(owner(request).customerId, [{ name: group.name, isDefault: group.isDefault, attributes: parseAttributes(typeof text === 'string' ? text : '') }]);
      } catch (error) {
        if (error instanceof Invalid) return groupPage(request, reply, group, 400, [{ kind: 'error', text: error.message }]);
        throw error;
      }
      return reply.redirect(`${ctx.root}${groupUrl(group)}?done=saved`, 303);
    });

    for (const [path, remove] of [['members', false], ['members/remove', true]] as const) {
      app.post(`/groups/:name/${path}`, async (request, reply) => {
        const group = await load(request);
        try {
          await groups.updateMembers(owner(request).customerId, group.name, [{ primaryEmail: field(request.body, 'email'), remove }]);
        } catch (error) {
          if (error instanceof Invalid) return groupPage(request, reply, group, 400, [{ kind: 'error', text: 'No user has that e-mail.' }]);
          throw error;
        }
        return reply.redirect(`${ctx.root}${groupUrl(group)}?done=${remove ? 'removed' : 'added'}`, 303);
      });
    }
  };
}
