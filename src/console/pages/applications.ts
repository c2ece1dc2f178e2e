/**
 * Applications (JWT, OAUTH, SAML) and their login policies. An OAUTH application's client secret is
 * shown once, on the page that answers its creation.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { APPLICATION_TYPES, type ApplicationType } from '../../identity/applications/types.ts';
import { FIRST_FACTORS, SECOND_FACTORS, type FirstFactor, type SecondFactor } from '../../identity/policies/types.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';

const NOTICES: Record<string, string> = {
  deleted: 'Application deleted.', 'policy-created': 'Login policy created.', 'policy-deleted': 'Login policy deleted.',
};
const lines = (text: string) => text.split(/[\r\n]+/).map((l) => l.trim()).filter(Boolean);

export function applicationRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { applications, policies } = ctx.services;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; secret?: Fragment } = {}) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const [apps, rules] = await Promise.all([applications.list(me.customerId), policies.list(me.customerId)]);
      const done = query(request, 'done');
      const list = opts.notices ?? (NOTICES[done] ? [{ kind: 'notice' as const, text: NOTICES[done]! }] : []);
      const appName = new Map(apps.map((a) => [a.uuid, a.name]));
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'applications', 'Applications', html`
${opts.secret ?? ''}
${apps.length === 0 ? html`<p>No applications yet.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Application id</th><th scope="col">URLs</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${apps.map((a) => html`<tr><td>${a.name}</td><td>${a.type}</td><td><code>${a.uuid}</code></td><td>${[...a.returnUrls, ...a.redirectUris, ...a.loginUrls].join(' ')}</td>
<td><form method="get" action="${ctx.root}/applications/${a.uuid}/delete"><button type="submit" class="secondary">Delete ${a.name}</button></form></td></tr>`)}</tbody>
</table>`}
<h2>Create application</h2>
<form method="post" action="${ctx.root}/applications">
${csrfField(page)}
<label for="app-name">Application name</label><input id="app-name" name="name" type="text" required maxlength="255">
<label for="app-type">Type</label><select id="app-type" name="type">${APPLICATION_TYPES.map((t) => html`<option>${t}</option>`)}</select>
<label for="app-urls">Return or redirect URLs</label>
<textarea id="app-urls" name="urls" aria-describedby="app-urls-help"></textarea>
<p id="app-urls-help" class="muted">One per line. JWT: where the magic-link landing may send the user with the token. OAUTH: the client's redirect URIs.</p>
<label for="app-login-urls">Login URLs (OAUTH)</label>
<textarea id="app-login-urls" name="loginUrls"></textarea>
<div class="actions"><button type="submit">Create application</button></div>
</form>

<h2>Login policies</h2>
${rules.length === 0 ? html`<p>No login policies yet.</p>` : html`
<table>
<thead><tr><th scope="col">Application</th><th scope="col">Group</th><th scope="col">First factor</th><th scope="col">Second factor</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${rules.map((r) => html`<tr><td>${appName.get(r.applicationUuid) ?? r.applicationUuid}</td><td>${r.groupName ?? 'Everyone else'}</td><td>${r.firstFactor}</td><td>${r.secondFactor}</td>
<td>${postButton(page, `/applications/policies/${r.id}/delete`, `Delete policy ${r.id}`, { secondary: true })}</td></tr>`)}</tbody>
</table>`}
${apps.length === 0 ? '' : html`
<h2>Create login policy</h2>
<form method="post" action="${ctx.root}/applications/policies">
${csrfField(page)}
<label for="policy-app">Application</label><select id="policy-app" name="application">${apps.map((a) => html`<option value="${a.uuid}">${a.name}</option>`)}</select>
<label for="policy-group">Group (empty: everyone without a group policy)</label><input id="policy-group" name="group" type="text" maxlength="255">
<label for="policy-first">First factor</label><select id="policy-first" name="firstFactor">${FIRST_FACTORS.map((f) => html`<option>${f}</option>`)}</select>
<label for="policy-second">Second factor</label><select id="policy-second" name="secondFactor">${SECOND_FACTORS.map((f) => html`<option>${f}</option>`)}</select>
<div class="actions"><button type="submit">Create policy</button></div>
</form>`}
`, list));
    };

    app.get('/applications', async (request, reply) => listPage(request, reply));

    app.post('/applications', async (request, reply) => {
      const type = field(request.body, 'type') as ApplicationType;
      const body = request.body as Record<string, unknown> | undefined;
      const urls = lines(typeof body?.urls === 'string' ? body.urls : '');
      try {
        if (!APPLICATION_TYPES.includes(type)) throw new Invalid('type', `must be one of ${APPLICATION_TYPES.join(', ')}`);
        const created = await applications.create(owner(request).customerId, {
          name: field(request.body, 'name'),
          type,
          ...(type === 'JWT' ? { returnUrls: urls } : type === 'OAUTH' ? { redirectUris: urls, loginUrls: lines(typeof body?.loginUrls === 'string' ? body.loginUrls : '') } : {}),
        });
        const a = created.application;
        return listPage(request, reply, {
          notices: [{ kind: 'notice', text: `Application ${a.name} created.` }],
          secret: created.clientSecret ? html`<div class="notice" role="status"><p><strong>Client secret of ${a.name}</strong> (shown once; copy it now):</p>
<p>client_id <code class="secret" id="client-id">${a.uuid}</code></p><p>client_secret <code class="secret" id="client-secret">${created.clientSecret}</code></p></div>` : '',
        });
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return listPage(request, reply, { status: 400, notices: [{ kind: 'error', text: error.message }] });
        throw error;
      }
    });

    const uuidParam = (request: FastifyRequest) => {
      const uuid = (request.params as { uuid: string }).uuid;
      if (!/^[0-9a-f-]{36}$/.test(uuid)) throw new NotFound('application');
      return uuid;
    };

    app.get('/applications/:uuid/delete', async (request, reply) => {
      const a = await applications.getByUuid(ctx.db, owner(request).customerId, uuidParam(request));
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'applications', `Delete ${a.name}?`, html`
<p>The application <strong>${a.name}</strong> is deleted with its login policies and its open magic links. This cannot be undone.</p>
<div class="actions">${postButton(page, `/applications/${a.uuid}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/applications">Cancel</a></div>`));
    });

    app.post('/applications/:uuid/delete', async (request, reply) => {
      await applications.delete(owner(request).customerId, uuidParam(request));
      return reply.redirect(`${ctx.root}/applications?done=deleted`, 303);
    });

    app.post('/applications/policies', async (request, reply) => {
      try {
        const firstFactor = field(request.body, 'firstFactor') as FirstFactor;
        const secondFactor = field(request.body, 'secondFactor') as SecondFactor;
        const group = field(request.body, 'group');
        await policies.create(owner(request).customerId, {
          applicationUuid: field(request.body, 'application'), firstFactor, secondFactor, ...(group ? { groupName: group } : {}),
        });
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict || error instanceof NotFound) {
          return listPage(request, reply, { status: 400, notices: [{ kind: 'error', text: error.message }] });
        }
        throw error;
      }
      return reply.redirect(`${ctx.root}/applications?done=policy-created`, 303);
    });

    app.post('/applications/policies/:id/delete', async (request, reply) => {
      const id = (request.params as { id: string }).id;
      if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('policy');
      await policies.delete(owner(request).customerId, Number(id));
      return reply.redirect(`${ctx.root}/applications?done=policy-deleted`, 303);
    });
  };
}
