/**
 * One group's page: Rename, Make default, Delete group (a confirmation page first), attributes, and
 * members (Remove asks first too). Add member is a search: type part of a username or e-mail and
 * press Add; one exact match is added, several are listed to pick from (no script needed). With the
 * script (member-search.ts) the users found appear as the owner types, each a button that adds it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Group } from '../../../identity/groups/types.ts';
import { GROUP_NAME, isGroupAttributeName } from '../../../identity/groups/rules.ts';
import type { UserLine } from '../../../identity/users/types.ts';
import { Conflict, Invalid, NotFound } from '../../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../../context.ts';
import { SCRIPT_PAGE_CSP } from '../../headers.ts';
import { html } from '../../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../../layout.ts';
import { errorNotices, fieldError, fieldState, inWords, parseAttributeLines, plural, REQUIRED, type FieldErrors } from '../../forms.ts';
import { MEMBER_SEARCH_JS } from './member-search.ts';

const NOTICES: Record<string, string> = {
  created: 'Group created.', renamed: 'Group renamed.', default: 'This is now the default group: new users join it.',
  saved: 'Attributes saved.', added: 'Member added.', removed: 'Member removed.',
};
const CANDIDATES = 20;

export const groupUrl = (group: Pick<Group, 'name'>): string => `/groups/${encodeURIComponent(group.name)}`;

/** A refusal about the group's name (`groupName`, `groups[0].groupName`), in this page's words. */
export function groupNameError(error: Invalid | Conflict): string {
  const text = error.message.replace(/^(groups\[0\]\.)?groupName /, '');
  if (/^a group named/.test(text)) return `A${text.slice(1)}.`;
  return text === error.message ? text : `Group name ${inWords(text)}`;
}

interface PageState {
  status?: number;
  errors?: FieldErrors;
  notices?: Notice[];
  /** What was typed in Rename, Add member and the attributes. */
  name?: string;
  member?: string;
  attributes?: string;
  /** Users found by Add member's search, to pick one. */
  candidates?: UserLine[];
}

export function groupPageRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { groups, users } = ctx.services;
    const load = async (request: FastifyRequest): Promise<Group> => {
      const group = await groups.findByName(owner(request).customerId, (request.params as { name: string }).name);
      if (!group) throw new NotFound('group', 'The group does not exist.');
      return group;
    };

    /** Users whose username, else whose e-mail, starts with `text`. */
    const findUsers = async (customerId: number, text: string, limit: number): Promise<UserLine[]> => {
      const byName = await users.search(customerId, { mode: 'username', prefix: text, after: '', limit });
      const byEmail = await users.search(customerId, { mode: 'email', prefix: text, after: '', limit });
      const seen = new Set<number>();
      return [...byName.users, ...byEmail.users].filter((u) => !seen.has(u.id) && seen.add(u.id)).slice(0, limit);
    };

    const groupPage = async (request: FastifyRequest, reply: FastifyReply, group: Group, state: PageState = {}) => {
      const page = pageContext(ctx, request, reply);
      const after = Number(/^[0-9]{1,15}$/.test(query(request, 'after')) ? query(request, 'after') : 0);
      const { members, next } = await groups.listMembers(owner(request).customerId, group.id, { after, limit: 50 });
      const url = groupUrl(group);
      const errors = state.errors ?? {};
      const done = query(request, 'done');
      const notices = state.notices ?? (NOTICES[done] ? [{ kind: 'notice' as const, text: NOTICES[done] }] : []);
      const attributes = state.attributes ?? Object.entries(group.attributes).filter(([k]) => isGroupAttributeName(k)).map(([k, v]) => `${k}=${v}`).join('\n');
      // The one page with a script (member search as you type): its CSP allows the console's own, nothing else.
      reply.header('content-security-policy', SCRIPT_PAGE_CSP);
      return sendPage(reply, state.status ?? 200, consolePage(page, 'groups', group.name, html`
<p>${plural(group.memberCount, 'member')}${group.isDefault ? html` · <strong>default group</strong> (new users join it)` : ''}.</p>
<div class="actions">
${group.isDefault ? '' : postButton(page, `${url}/default`, 'Make default', { secondary: true })}
${group.isCustomerDefault ? '' : html`<form method="get" action="${ctx.root}${url}/delete"><button type="submit" class="danger">Delete group</button></form>`}
</div>
<h2 id="rename-heading">Rename</h2>
${group.isCustomerDefault ? html`<p class="muted">The built-in group keeps its name; another group can be made the default.</p>` : html`
<form method="post" action="${ctx.root}${url}/rename" class="inline" aria-labelledby="rename-heading">
${csrfField(page)}
<div><label for="group-name">Group name${REQUIRED}</label><input id="group-name" name="name" type="text" required maxlength="${GROUP_NAME.maxLength}" value="${state.name ?? group.name}"${fieldState(errors, 'group-name')}>${fieldError(errors, 'group-name')}</div>
<button type="submit">Save</button>
</form>`}
<h2>Members</h2>
<h3 id="add-heading">Add member</h3>
<form method="post" action="${ctx.root}${url}/members" aria-labelledby="add-heading">
${csrfField(page)}
<label for="member">Search users</label>
<input id="member" name="member" type="search" autocomplete="off" placeholder="Start of a username or e-mail" value="${state.member ?? ''}"
 data-candidates="${ctx.root}${url}/candidates"${fieldState(errors, 'member', 'member-help')}>
${fieldError(errors, 'member')}
<p id="member-help" class="muted">Type the start of a username or e-mail and press Add; pick the user when several match.</p>
${state.candidates?.length ? html`<fieldset><legend>${plural(state.candidates.length, 'user')} found: pick one</legend>
${state.candidates.map((u, i) => html`<div class="check"><input type="radio" id="pick-${i}" name="user" value="${u.email}"><label for="pick-${i}">${u.username} · ${u.email}${u.name ? ` · ${u.name}` : ''}</label></div>`)}
</fieldset>` : ''}
<div class="actions"><button type="submit">Add</button></div>
<ul id="member-suggestions" class="suggestions" aria-live="polite"></ul>
</form>
${members.length === 0 ? html`<p>No members${after ? ' on this page' : ''}.</p>` : html`
<table>
<thead><tr><th scope="col">Username</th><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${members.map((m) => html`<tr><td><a href="${ctx.root}/users/${m.id}">${m.username}</a></td><td>${m.email}</td><td>${m.name}</td><td><form method="get" action="${ctx.root}${url}/members/remove"><input type="hidden" name="user" value="${m.id}"><button type="submit" class="secondary">Remove ${m.username}</button></form></td></tr>`)}</tbody>
</table>`}
<nav class="pager" aria-label="Pages">${after ? html`<a href="${ctx.root}${url}">First page</a>` : ''}${next !== undefined ? html`<a rel="next" href="${ctx.root}${url}?after=${next}">Next page</a>` : ''}</nav>
<h2>Attributes</h2>
<form method="post" action="${ctx.root}${url}/attributes">
${csrfField(page)}
<label for="attributes">Group attributes</label>
<textarea id="attributes" name="attributes"${fieldState(errors, 'attributes', 'attributes-help')}>${attributes}</textarea>
${fieldError(errors, 'attributes')}
<p id="attributes-help" class="muted">One per line: groupAttribute1=value … groupAttribute50=value. Remove a line to clear it.</p>
<div class="actions"><button type="submit">Update attributes</button></div>
</form>
<script src="${ctx.root}/member-search.js" defer></script>
`, [...notices, ...errorNotices(errors)]));
    };

    app.get('/member-search.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(MEMBER_SEARCH_JS));

    app.get('/groups/:name', async (request, reply) => groupPage(request, reply, await load(request)));

    app.get('/groups/:name/candidates', async (request, reply) => {
      const group = await load(request);
      const text = query(request, 'q').trim();
      const found = text ? await findUsers(group.customerId, text, 10) : [];
      return reply.type('application/json; charset=utf-8').send(found.map((u) => ({ username: u.username, email: u.email, name: u.name })));
    });

    app.post('/groups/:name/rename', async (request, reply) => {
      const group = await load(request);
      const name = field(request.body, 'name');
      try {
        if (!name) throw new Invalid('groupName', 'is required');
        await groups.rename(group.customerId, group.id, name, request.auditContext);
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return groupPage(request, reply, group, { status: 400, errors: { 'group-name': groupNameError(error) }, name });
        throw error;
      }
      return reply.redirect(`${ctx.root}${groupUrl({ name })}?done=renamed`, 303);
    });

    app.post('/groups/:name/default', async (request, reply) => {
      const group = await load(request);
      await groups.makeDefault(group.customerId, group.id, request.auditContext);
      return reply.redirect(`${ctx.root}${groupUrl(group)}?done=default`, 303);
    });

    app.get('/groups/:name/delete', async (request, reply) => {
      const group = await load(request);
      const page = pageContext(ctx, request, reply);
      if (group.isCustomerDefault) throw new Invalid('group', 'is the built-in group, which cannot be deleted');
      return sendPage(reply, 200, consolePage(page, 'groups', `Delete group ${group.name}?`, html`
<p>The group <strong>${group.name}</strong> is deleted with its ${plural(group.memberCount, 'membership')} and its login policies; its members stay as users.${group.isDefault ? ' New users join the built-in group again.' : ''} This cannot be undone.</p>
<div class="actions">${postButton(page, `${groupUrl(group)}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}${groupUrl(group)}">Cancel</a></div>`));
    });

    app.post('/groups/:name/delete', async (request, reply) => {
      const group = await load(request);
      await groups.remove(group.customerId, group.id, request.auditContext);
      return reply.redirect(`${ctx.root}/groups?done=deleted`, 303);
    });

    app.post('/groups/:name/attributes', async (request, reply) => {
      const group = await load(request);
      const body = request.body as Record<string, unknown> | undefined;
      const text = typeof body?.attributes === 'string' ? body.attributes : '';
      try {
        // The service merges attributes: one removed from the text is cleared explicitly ("" clears).
        const stored = Object.keys(group.attributes).filter(isGroupAttributeName);
        const attributes = { ...Object.fromEntries(stored.map((k) => [k, ''])), ...parseAttributeLines(text, 'attributes', 'groupAttributeN=value') };
        await groups.upsert(group.customerId, [{ name: group.name, isDefault: group.isDefault, attributes }], request.auditContext);
      } catch (error) {
        if (error instanceof Invalid) return groupPage(request, reply, group, { status: 400, errors: { attributes: error.message.replace(/^groups\[0\]\./, '') }, attributes: text });
        throw error;
      }
      return reply.redirect(`${ctx.root}${groupUrl(group)}?done=saved`, 303);
    });

    app.post('/groups/:name/members', async (request, reply) => {
      const group = await load(request);
      const customerId = group.customerId;
      const picked = field(request.body, 'user');
      const text = field(request.body, 'member');
      let email = picked;
      if (!email) {
        if (!text) return groupPage(request, reply, group, { status: 400, errors: { member: 'Type part of a username or e-mail, then press Add.' } });
        const exact = await users.findByLogin(customerId, text);
        if (exact) email = exact.email;
        else {
          const candidates = await findUsers(customerId, text, CANDIDATES);
          if (candidates.length === 0) return groupPage(request, reply, group, { status: 400, member: text, errors: { member: `No user's username or e-mail starts with "${text}".` } });
          if (candidates.length > 1) {
            return groupPage(request, reply, group, { member: text, candidates,
              notices: [{ kind: 'notice', text: `${plural(candidates.length, 'user')}${candidates.length === CANDIDATES ? ' or more' : ''} found: pick one and press Add.` }] });
          }
          email = candidates[0]!.email;
        }
      }
      try {
        await groups.updateMembers(customerId, group.name, [{ primaryEmail: email, remove: false }], request.auditContext);
      } catch (error) {
        if (error instanceof Invalid) return groupPage(request, reply, group, { status: 400, member: text, errors: { member: 'No user has that e-mail.' } });
        throw error;
      }
      return reply.redirect(`${ctx.root}${groupUrl(group)}?done=added`, 303);
    });

    /** The user the request names (`user`, a user id). @throws NotFound */
    const loadMember = async (group: Group, source: unknown) => {
      const id = field(source, 'user');
      const user = /^[0-9]{1,15}$/.test(id) ? await users.findById(group.customerId, Number(id)) : undefined;
      if (!user || user.markForDeletion) throw new NotFound('user');
      return user;
    };

    // Removing a member asks first; the answer is a redirect, so a reload removes nothing again.
    app.get('/groups/:name/members/remove', async (request, reply) => {
      const group = await load(request);
      const user = await loadMember(group, request.query);
      const url = groupUrl(group);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'groups', `Remove ${user.username} from ${group.name}?`, html`
<p><strong>${user.username}</strong> (${user.email}) leaves the group <strong>${group.name}</strong>: the group's login policies no longer
apply to them and their attributes in this group are removed. They stay a user, in their other groups.</p>
<div class="actions">${postButton(page, `${url}/members/remove`, 'Remove', { danger: true, fields: { user: String(user.id) } })}<a href="${ctx.root}${url}">Cancel</a></div>`));
    });

    app.post('/groups/:name/members/remove', async (request, reply) => {
      const group = await load(request);
      const user = await loadMember(group, request.body);
      await groups.updateMembers(group.customerId, group.name, [{ primaryEmail: user.email, remove: true }], request.auditContext);
      return reply.redirect(`${ctx.root}${groupUrl(group)}?done=removed`, 303);
    });
  };
}
