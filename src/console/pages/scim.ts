/**
 * SCIM: the base URL to paste into Okta or Entra ID, the customer's SCIM tokens (name, created, last
 * used) with Delete after a confirmation page, and a form that creates one and shows it once.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { SCIM_TOKEN_NAME } from '../../scim/tokens/rules.ts';
import { SCIM_TOKEN_NOT_FOUND } from '../../scim/tokens/service.ts';
import type { ScimToken } from '../../scim/tokens/types.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { errorNotices, fieldError, fieldState, inWords, plural, REQUIRED, type FieldErrors } from '../forms.ts';

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const minute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** DESIGN: SCIM 2.0 is served at {base_url}/scim/v2. */
export const scimBaseUrl = (publicUrl: string) => `${publicUrl.replace(/\/+$/, '')}/scim/v2`;

export function scimRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { scimTokens } = ctx.services;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; token?: Fragment; errors?: FieldErrors; name?: string } = {}) => {
      const errors = opts.errors ?? {};
      const page = pageContext(ctx, request, reply);
      const list = await scimTokens.list(owner(request).customerId);
      const notices = opts.notices ?? (query(request, 'done') === 'deleted' ? [{ kind: 'notice' as const, text: 'SCIM token deleted; requests carrying it are refused.' }] : []);
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'scim', 'SCIM', html`
<p>Okta, Microsoft Entra ID and other directories create, update and disable your users and groups here through SCIM 2.0. Set up the directory with the base URL and a token below.</p>
<h2>Base URL</h2>
<p><code class="secret" id="scim-base-url">${scimBaseUrl(ctx.publicUrl)}</code></p>
<p class="muted">In Okta: SCIM connector base URL. In Entra ID: Tenant URL. The directory sends the token as <code>Authorization: Bearer</code>.</p>
${opts.token ?? ''}
<h2>Tokens</h2>
${list.length === 0 ? html`<p>No SCIM tokens yet.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${list.map((t) => html`<tr><td>${t.name}</td><td>${day(t.createdAt)}</td><td>${t.lastUsedAt === null ? 'Never' : minute(t.lastUsedAt)}</td>
<td><form method="get" action="${ctx.root}/scim/tokens/${t.tokenId}/delete"><button type="submit" class="secondary">Delete ${t.name}</button></form></td></tr>`)}</tbody>
</table>
<p>${plural(list.length, 'SCIM token')}.</p>`}
<h2>Create SCIM token</h2>
<form method="post" action="${ctx.root}/scim" class="inline">
${csrfField(page)}
<div><label for="scim-token-name">Token name${REQUIRED}</label><input id="scim-token-name" name="name" type="text" required maxlength="${SCIM_TOKEN_NAME.maxLength}" placeholder="Okta" value="${opts.name ?? ''}"${fieldState(errors, 'scim-token-name')}>${fieldError(errors, 'scim-token-name')}</div>
<button type="submit">Create SCIM token</button>
</form>`, [...notices, ...errorNotices(errors)]));
    };

    app.get('/scim', async (request, reply) => listPage(request, reply));

    app.post('/scim', async (request, reply) => {
      const name = field(request.body, 'name');
      try {
        const created = await scimTokens.create(owner(request).customerId, name, request.auditContext);
        return listPage(request, reply, {
          notices: [{ kind: 'notice', text: `SCIM token ${created.scimToken.name} created.` }],
          token: html`<div class="notice" role="status"><p><strong>SCIM token</strong> (shown once; copy it now into Okta's API Token or Entra ID's Secret Token field: it is not shown again):</p>
<p><code class="secret" id="scim-token">${created.token}</code></p></div>`,
        });
      } catch (error) {
        if (error instanceof Invalid) {
          return listPage(request, reply, { status: 400, notices: [], errors: { 'scim-token-name': `Token name ${inWords(error.message.slice(error.field.length + 1))}` }, name });
        }
        throw error;
      }
    });

    const load = async (request: FastifyRequest): Promise<ScimToken> => {
      const { tokenId } = request.params as { tokenId: string };
      const token = (await scimTokens.list(owner(request).customerId)).find((t) => t.tokenId === tokenId);
      if (!token) throw new NotFound('scimToken', SCIM_TOKEN_NOT_FOUND);
      return token;
    };

    app.get('/scim/tokens/:tokenId/delete', async (request, reply) => {
      const token = await load(request);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'scim', `Delete SCIM token ${token.name}?`, html`
<p>The token <strong>${token.name}</strong> (<code>${token.tokenId}</code>) is deleted: the directory that uses it can no longer provision users or groups until it is given a new one. This cannot be undone.</p>
<div class="actions">${postButton(page, `/scim/tokens/${token.tokenId}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/scim">Cancel</a></div>`));
    });

    app.post('/scim/tokens/:tokenId/delete', async (request, reply) => {
      const token = await load(request);
      await scimTokens.delete(owner(request).customerId, token.tokenId, request.auditContext);
      return reply.redirect(`${ctx.root}/scim?done=deleted`, 303);
    });
  };
}
