/**
 * Webhooks: list, create (secret shown once), delete after a confirmation page, and each endpoint's
 * recent deliveries with their answers and a Resend.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { WEBHOOK_URL_MAX_LENGTH } from '../../webhooks/rules.ts';
import { WEBHOOK_NOT_FOUND } from '../../webhooks/service.ts';
import type { Webhook } from '../../webhooks/types.ts';
import { field, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { errorNotices, fieldError, fieldState, plural, REQUIRED, type FieldErrors } from '../forms.ts';

const when = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString().slice(0, 19).replace('T', ' '));

export function webhookRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { webhooks } = ctx.services;

    const listPage = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; secret?: Fragment; errors?: FieldErrors; url?: string; events?: string } = {}) => {
      const errors = opts.errors ?? {};
      const page = pageContext(ctx, request, reply);
      const list = await webhooks.list(owner(request).customerId);
      const done = query(request, 'done');
      const notices = opts.notices ?? (done === 'deleted' ? [{ kind: 'notice' as const, text: 'Webhook deleted.' }] : []);
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'webhooks', 'Webhooks', html`
<p>Each audit event whose action starts with one of an endpoint's prefixes is POSTed to it, signed by the Standard Webhooks scheme.</p>
${opts.secret ?? ''}
${list.length === 0 ? html`<p>No webhooks yet.</p>` : html`
<table>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${list.map((w) => html`<tr><td><a href="${ctx.root}/webhooks/${w.webhookId}">${w.url}</a></td><td>${w.events.join(', ')}</td><td>${w.enabled ? 'Enabled' : 'Disabled (410 Gone)'}</td><td>${when(w.createdAt).slice(0, 10)}</td>
<td><form method="get" action="${ctx.root}/webhooks/${w.webhookId}/delete"><button type="submit" class="secondary">Delete ${w.url}</button></form></td></tr>`)}</tbody>
</table>
<p>${plural(list.length, 'webhook')}.</p>`}
<h2>Create webhook</h2>
<form method="post" action="${ctx.root}/webhooks" class="inline">
${csrfField(page)}
<div><label for="webhook-url">Endpoint URL${REQUIRED}</label><input id="webhook-url" name="url" type="url" required maxlength="${WEBHOOK_URL_MAX_LENGTH}" value="${opts.url ?? ''}"${fieldState(errors, 'webhook-url')}>${fieldError(errors, 'webhook-url')}</div>
<div><label for="webhook-events">Events (action prefixes, comma-separated; * for all)</label><input id="webhook-events" name="events" type="text" value="${opts.events ?? '*'}"${fieldState(errors, 'webhook-events')}>${fieldError(errors, 'webhook-events')}</div>
<button type="submit">Create webhook</button>
</form>`, [...notices, ...errorNotices(errors)]));
    };

    app.get('/webhooks', async (request, reply) => listPage(request, reply));

    app.post('/webhooks', async (request, reply) => {
      const url = field(request.body, 'url');
      const events = field(request.body, 'events');
      try {
        const created = await webhooks.create(owner(request).customerId, { url, events: events.split(',').map((e) => e.trim()).filter(Boolean) }, request.auditContext);
        return listPage(request, reply, {
          notices: [{ kind: 'notice', text: `Webhook for ${created.webhook.url} created.` }],
          secret: html`<div class="notice" role="status"><p><strong>Signing secret</strong> (shown once; copy it now):</p>
<p><code class="secret" id="webhook-secret">${created.secret}</code></p></div>`,
        });
      } catch (error) {
        if (error instanceof Invalid) {
          const id = error.field === 'events' ? 'webhook-events' : 'webhook-url';
          const label = error.field === 'events' ? 'Events' : 'Endpoint URL';
          return listPage(request, reply, { status: 400, notices: [], errors: { [id]: `${label} ${error.message.slice(error.field.length + 1)}` }, url, events });
        }
        throw error;
      }
    });

    const load = async (request: FastifyRequest): Promise<Webhook> => {
      const { webhookId } = request.params as { webhookId: string };
      const webhook = (await webhooks.list(owner(request).customerId)).find((w) => w.webhookId === webhookId);
      if (!webhook) throw new NotFound('webhook', WEBHOOK_NOT_FOUND);
      return webhook;
    };

    app.get('/webhooks/:webhookId', async (request, reply) => {
      const webhook = await load(request);
      const page = pageContext(ctx, request, reply);
      const deliveries = await webhooks.deliveries(owner(request).customerId, webhook.webhookId, 20);
      const notices: Notice[] = query(request, 'done') === 'resent' ? [{ kind: 'notice', text: 'Delivery queued again, with the same webhook-id.' }] : [];
      return sendPage(reply, 200, consolePage(page, 'webhooks', `Webhook ${webhook.url}`, html`
<p>Events: ${webhook.events.join(', ')} · ${webhook.enabled ? 'Enabled' : `Disabled ${when(webhook.disabledAt)} (the endpoint answered 410 Gone)`}</p>
<h2>Recent deliveries</h2>
${deliveries.length === 0 ? html`<p>No deliveries yet.</p>` : html`
<table>
<thead><tr><th scope="col">Event</th><th scope="col">webhook-id</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${deliveries.map((d) => html`<tr><td>${d.action}</td><td><code>${d.messageId}</code></td><td>${d.status}</td><td>${String(d.attempts)}</td>
<td>${d.lastStatus === null ? (d.lastError ?? '') : html`${String(d.lastStatus)} <code>${(d.lastAnswer ?? '').slice(0, 200)}</code>`}${d.lastStatus !== null && d.lastError ? html` (${d.lastError})` : ''}</td><td>${when(d.createdAt)}</td>
<td>${webhook.enabled ? postButton(page, `/webhooks/${webhook.webhookId}/deliveries/${d.id}/resend`, `Resend ${d.messageId}`, { secondary: true }) : ''}</td></tr>`)}</tbody>
</table>`}
<p><a href="${ctx.root}/webhooks">All webhooks</a></p>`, notices));
    });

    app.post('/webhooks/:webhookId/deliveries/:deliveryId/resend', async (request, reply) => {
      const webhook = await load(request);
      const deliveryId = Number((request.params as { deliveryId: string }).deliveryId);
      if (!Number.isSafeInteger(deliveryId)) throw new NotFound('delivery', 'The delivery does not exist.');
      await webhooks.resend(owner(request).customerId, deliveryId);
      return reply.redirect(`${ctx.root}/webhooks/${webhook.webhookId}?done=resent`, 303);
    });

    app.get('/webhooks/:webhookId/delete', async (request, reply) => {
      const webhook = await load(request);
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'webhooks', `Delete webhook ${webhook.url}?`, html`
<p>The endpoint <strong>${webhook.url}</strong> (<code>${webhook.webhookId}</code>) and its deliveries are deleted; nothing more is sent to it. This cannot be undone.</p>
<div class="actions">${postButton(page, `/webhooks/${webhook.webhookId}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/webhooks">Cancel</a></div>`));
    });

    app.post('/webhooks/:webhookId/delete', async (request, reply) => {
      const webhook = await load(request);
      await webhooks.delete(owner(request).customerId, webhook.webhookId, request.auditContext);
      return reply.redirect(`${ctx.root}/webhooks?done=deleted`, 303);
    });
  };
}
