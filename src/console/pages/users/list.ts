/**
 * The users list: search by any part of the username, e-mail, first or last name (any case), sort by
 * username, creation or last sign-in, numbered pages of 50 with the total.
 */
import type { FastifyInstance } from 'fastify';
import type { UserSort } from '../../../identity/users/search-repo.ts';
import { owner, pageContext, query, sendPage, type ConsoleContext } from '../../context.ts';
import { plural } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage } from '../../layout.ts';
import { noticeOf, when } from './shared.ts';

export const PAGE_SIZE = 50;
/** Longer than any username, e-mail or name could match. */
const MAX_SEARCH = 254;

const SORTS: [UserSort, string][] = [['username', 'Username'], ['created', 'Newest first'], ['lastSignIn', 'Last sign-in']];

/** The page numbers to offer: the first, the last, and two either side of the current one. */
function pageNumbers(current: number, last: number): (number | 'gap')[] {
  const out: (number | 'gap')[] = [];
  for (let n = 1; n <= last; n++) {
    if (n === 1 || n === last || Math.abs(n - current) <= 2) out.push(n);
    else if (out[out.length - 1] !== 'gap') out.push('gap');
  }
  return out;
}

export async function listRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  app.get('/users', async (request, reply) => {
    const me = owner(request);
    const page = pageContext(ctx, request, reply);
    const q = query(request, 'q').trim().slice(0, MAX_SEARCH);
    const sort: UserSort = SORTS.some(([s]) => s === query(request, 'sort')) ? query(request, 'sort') as UserSort : 'username';
    const asked = Number(query(request, 'page'));
    let number = Number.isSafeInteger(asked) && asked >= 1 ? asked : 1;
    let result = await ctx.services.users.findPage(me.customerId, { text: q, sort, offset: (number - 1) * PAGE_SIZE, limit: PAGE_SIZE });
    const last = Math.max(1, Math.ceil(result.total / PAGE_SIZE));
    if (number > last) {
      // A page past the end (users deleted since the link was made): the last page instead.
      number = last;
      result = await ctx.services.users.findPage(me.customerId, { text: q, sort, offset: (number - 1) * PAGE_SIZE, limit: PAGE_SIZE });
    }
    const link = (n: number) => `${ctx.root}/users?${new URLSearchParams({ ...(q ? { q } : {}), ...(sort !== 'username' ? { sort } : {}), ...(n > 1 ? { page: String(n) } : {}) })}`;
    const first = (number - 1) * PAGE_SIZE + 1;
    const shown = result.users.length;
    return sendPage(reply, 200, consolePage(page, 'users', 'Users', html`
<form method="get" action="${ctx.root}/users" class="inline" role="search">
<div><label for="q">Search</label><input id="q" name="q" type="search" value="${q}" maxlength="${MAX_SEARCH}" placeholder="Username, e-mail or name"></div>
<div><label for="sort">Sort by</label><select id="sort" name="sort">${SORTS.map(([value, label]) => html`<option value="${value}"${value === sort ? html` selected` : ''}>${label}</option>`)}</select></div>
<button type="submit" class="secondary">Search</button>
${q ? html`<a href="${ctx.root}/users${sort !== 'username' ? `?sort=${sort}` : ''}">Clear search</a>` : ''}
</form>
<form method="get" action="${ctx.root}/users/new" class="actions"><button type="submit">Create user</button></form>
${shown === 0 ? html`<p>${q ? `No users match “${q}”.` : 'No users yet.'}</p>` : html`
<table>
<caption class="muted">${q ? `Users matching “${q}”` : 'Users'}</caption>
<thead><tr><th scope="col">Username</th><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last sign-in</th></tr></thead>
<tbody>
${result.users.map((u) => html`<tr><td><a href="${ctx.root}/users/${u.id}">${u.username}</a></td><td>${u.email}</td><td>${u.name}</td><td>${u.isDisabled ? 'Disabled' : 'Active'}</td><td>${u.createdAt ? when(u.createdAt) : ''}</td><td>${u.lastSignInAt ? when(u.lastSignInAt) : 'Never'}</td></tr>`)}
</tbody>
</table>
<p id="showing">Showing ${first}–${first + shown - 1} of ${plural(result.total, 'user')}</p>`}
${last > 1 ? html`<nav class="pager" aria-label="Pages"><ul>
${number > 1 ? html`<li><a href="${link(number - 1)}" rel="prev">Previous page</a></li>` : ''}
${pageNumbers(number, last).map((n) => n === 'gap' ? html`<li aria-hidden="true">…</li>`
    : html`<li><a href="${link(n)}" aria-label="Page ${n}"${n === number ? html` aria-current="page"` : ''}>${n}</a></li>`)}
${number < last ? html`<li><a href="${link(number + 1)}" rel="next">Next page</a></li>` : ''}
</ul></nav>` : ''}
`, noticeOf(request)));
  });
}
