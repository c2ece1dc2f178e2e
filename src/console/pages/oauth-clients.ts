/** OAuth clients (client credentials for POST /oauth/token): list, create (secret shown once), delete after a confirmation page. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAUTH_CLIENT_NAME } from '../../identity/oauth-clients/rules.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { errorNotices, fieldError, fieldState, inWords, plural, REQUIRED, type FieldErrors } from '../forms.ts';

export function oauthClientRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { oauthClients } = ctx.services;
    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; secret?: Fragment; errors?: FieldErrors; name?: string } = {}) => {
      const errors = opts.errors ?? {};
      const page = pageContext(ctx, request, reply);
      const clients = await oauthClients.list(owner(request).customerId);
      const list = opts.notices ?? (query(request, 'done') === 'deleted' ? [{ kind: 'notice' as const, text: 'OAuth client deleted; its tokens stop working.' }] : []);
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'oauth-clients', 'OAuth clients', html`
<p>OAuth clients get access tokens for the magic-link routes from <code>POST /oauth/token</code> (client credentials).</p>
${opts.secret ?? ''}
${clients.length === 0 ? html`<p>No OAuth clients yet.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">client_id</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${clients.map((c) => html`<tr><td>${c.name}</td><td><code>${c.clientId}</code></td><td>${new Date(c.createdAt).toISOString().slice(0, 10)}</td>
<td><form method="get" action="${ctx.root}/oauth-clients/${c.clientId}/delete"><button type="submit" class="secondary">Delete ${c.name}</button></form></td></tr>`)}</tbody>
</table>
<p>${plural(clients.length, 'OAuth client')}.</p>`}
<h2>Create OAuth client</h2>
<form method="post" action="${ctx.root}/oauth-clients" class="inline">
${csrfField(page)}
<div><label for="client-name">Client name${REQUIRED}</label><input id="client-name" name="name" type="text" required maxlength="${OAUTH_CLIENT_NAME.maxLength}" value="${opts.name ?? ''}"${fieldState(errors, 'client-name')}>${fieldError(errors, 'client-name')}</div>
<button type="submit">Create OAuth client</button>
</form>`, [...list, ...errorNotices(errors)]));
    };

    app.get('/oauth-clients', async (request, reply) => listPage(request, reply));

    app.post('/oauth-clients', async (request, reply) => {
      try {
        const created = await oauthClients.create(owner(request).customerId, { name: field(request.body, 'name') }, request.auditContext);
        return listPage(request, reply, {
          notices: [{ kind: 'notice', text: `OAuth client ${created.client.name} created.` }],
          secret: html`<div class="notice" role="status"><p><strong>Client secret</strong> (shown once; copy it now):</p>
<p>client_id <code class="secret" id="client-id">${created.client.clientId}</code></p><p>client_secret <code class="secret" id="client-secret">${created.clientSecret}</code></p></div>`,
        });
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) {
          return listPage(request, reply, { status: 400, notices: [], errors: { 'client-name': error.message.startsWith('name ') ? `Client name ${inWords(error.message.slice('name '.length))}` : error.message }, name: field(request.body, 'name') });
        }
        throw error;
      }
    });

    const load = async (request: FastifyRequest) => {
      const clientId = (request.params as { clientId: string }).clientId;
      const client = /^[0-9a-f-]{36}$/.test(clientId) ? (await oauthClients.list(owner(request).customerId)).find((c) => c.clientId === clientId) : undefined;
      if (!client) throw new NotFound('OAuth client', 'The OAuth client does not exist.');
      return client;
    };

    app.get('/oauth-clients/:clientId/delete', async (request, reply) => {
      const client = await load(request);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'oauth-clients', `Delete OAuth client ${client.name}?`, html`
<p>The client <strong>${client.name}</strong> (<code>${client.clientId}</code>) is deleted: its secret and the access tokens it holds stop working at once. This cannot be undone.</p>
<div class="actions">${postButton(page, `/oauth-clients/${client.clientId}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/oauth-clients">Cancel</a></div>`));
    });

    app.post('/oauth-clients/:clientId/delete', async (request, reply) => {
      const client = await load(request);
      await oauthClients.delete(owner(request).customerId, client.clientId, request.auditContext);
      return reply.redirect(`${ctx.root}/oauth-clients?done=deleted`, 303);
    });
  };
}
