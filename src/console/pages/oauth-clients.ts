/** OAuth clients (client credentials for POST /oauth/token): list, create (secret shown once), delete. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';

export function oauthClientRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { oauthClients } = ctx.services;
    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; secret?: Fragment } = {}) => {
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
<td>${postButton(page, `/oauth-clients/${c.clientId}/delete`, `Delete ${c.name}`, { secondary: true })}</td></tr>`)}</tbody>
</table>`}
<h2>Create OAuth client</h2>
<form method="post" action="${ctx.root}/oauth-clients" class="inline">
${csrfField(page)}
<div><label for="client-name">Client name</label><input id="client-name" name="name" type="text" required maxlength="255"></div>
<button type="submit">Create OAuth client</button>
</form>`, list));
    };

    app.get('/oauth-clients', async (request, reply) => listPage(request, reply));

    app.post('/oauth-clients', async (request, reply) => {
      try {
        const created = await oauthClients.create(owner(request).customerId, { name: field(request.body, 'name') });
        return listPage(request, reply, {
          notices: [{ kind: 'notice', text: `OAuth client ${created.client.name} created.` }],
          secret: html`<div class="notice" role="status"><p><strong>Client secret</strong> (shown once; copy it now):</p>
<p>client_id <code class="secret" id="client-id">${created.client.clientId}</code></p><p>client_secret <code class="secret" id="client-secret">${created.clientSecret}</code></p></div>`,
        });
      } catch (error) {
        if (error instanceof Invalid || error instanceof Conflict) return listPage(request, reply, { status: 400, notices: [{ kind: 'error', text: error.message }] });
        throw error;
      }
    });

    app.post('/oauth-clients/:clientId/delete', async (request, reply) => {
      const clientId = (request.params as { clientId: string }).clientId;
      if (!/^[0-9a-f-]{36}$/.test(clientId)) throw new NotFound('OAuth client');
      await oauthClients.delete(owner(request).customerId, clientId);
      return reply.redirect(`${ctx.root}/oauth-clients?done=deleted`, 303);
    });
  };
}
