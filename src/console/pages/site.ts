/**
 * Site protection: the content site's credential methods, JWT lifetime and editor/admin groups (the
 * settings `latchkey site config set` writes), API-token limits (environment, shown), and site API
 * keys. Only the customer the site serves may change site-wide settings; every customer manages its
 * own API keys.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SITE_METHODS, type SiteConfig, type SiteMethod } from '../../config.ts';
import { Invalid, LatchkeyError, NotFound } from '../../lib/errors.ts';
import { field, fields, owner, pageContext, query, sendPage, type ConsoleContext } from '../context.ts';
import { html, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';

const METHOD_NAMES: Record<SiteMethod, string> = {
  jwt: 'JWTs from the token endpoint', provider: 'Third-party provider tokens', apikey: 'API keys', apitoken: 'API tokens',
};
// The content site reads its settings when it starts (compose/site.ts): a saved change waits for a restart.
const NOTICES: Record<string, string> = { saved: 'Site settings saved. They apply when the server restarts.', revoked: 'API key revoked.' };

export function siteRoutes(ctx: ConsoleContext, base: SiteConfig | undefined) {
  return async (app: FastifyInstance): Promise<void> => {
    const { siteSettings, siteApiKeys, customers } = ctx.services;
    const isSiteCustomer = async (customerKey: string) => {
      const key = base?.customerKey ?? await siteSettings.boundCustomerKey();
      return (await customers.findSiteCustomer(key))?.customerKey === customerKey;
    };

    const show = async (request: FastifyRequest, reply: FastifyReply, opts: { status?: number; notices?: Notice[]; created?: Fragment } = {}) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const [mine, keys] = await Promise.all([isSiteCustomer(me.customerKey), siteApiKeys.list(me.customerId)]);
      const settings = base && (await siteSettings.effective(base)).config;
      const done = query(request, 'done');
      const list = opts.notices ?? (NOTICES[done] ? [{ kind: 'notice' as const, text: NOTICES[done]! }] : []);
      return sendPage(reply, opts.status ?? 200, consolePage(page, 'site', 'Site', html`
<h2>Credential methods</h2>
${!settings ? html`<p>The content site is not configured on this node.</p>` : !mine ? html`<p>The content site serves another customer: its settings are not yours to change.</p>` : html`
<form method="post" action="${ctx.root}/site/settings">
${csrfField(page)}
<fieldset><legend>Accepted credentials</legend>
${SITE_METHODS.map((m) => html`<div class="check"><input type="checkbox" id="method-${m}" name="method" value="${m}"${settings.methods.includes(m) ? html` checked` : ''}><label for="method-${m}">${METHOD_NAMES[m]}</label></div>`)}
</fieldset>
<label for="jwt-ttl">JWT lifetime (seconds)</label><input id="jwt-ttl" name="jwtTtlSeconds" type="number" min="60" max="2592000" value="${settings.jwtTtlSeconds}">
<label for="editor-group">Editor group</label><input id="editor-group" name="editorGroup" type="text" value="${settings.editorGroup}">
<label for="admin-group">Admin group</label><input id="admin-group" name="adminGroup" type="text" value="${settings.adminGroup}">
<p class="muted" id="site-settings-restart">The content site reads these settings when it starts: a change applies after a restart of the server.</p>
<div class="actions"><button type="submit">Save site settings</button></div>
</form>
<h2>API-token restrictions</h2>
<dl class="facts">
<dt>Longest lifetime</dt><dd>${base!.apiTokens.maxExpiryDays === 0 ? 'No limit' : `${base!.apiTokens.maxExpiryDays} days`}</dd>
<dt>Tokens per user</dt><dd>${base!.apiTokens.maxPerUser}</dd>
<dt>Expired tokens deleted after</dt><dd>${base!.apiTokens.purgeAfterDays} days</dd>
</dl>
<p class="muted">Set in the environment (LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS, …_MAX_PER_USER, …_PURGE_AFTER_DAYS).</p>`}

<h2>API keys</h2>
${opts.created ?? ''}
${keys.length === 0 ? html`<p>No API keys.</p>` : html`
<table>
<thead><tr><th scope="col">Name</th><th scope="col">User</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${keys.map((k) => html`<tr><td>${k.name}</td><td>${k.username ?? 'Site default (read-only)'}</td><td>${k.expiresAt ? new Date(k.expiresAt).toISOString().slice(0, 10) : 'Never'}</td><td>${k.revokedAt ? 'Revoked' : 'Active'}</td>
<td>${k.revokedAt ? '' : postButton(page, `/site/api-keys/${k.id}/revoke`, `Revoke ${k.name}`, { secondary: true })}</td></tr>`)}</tbody>
</table>`}
<form method="post" action="${ctx.root}/site/api-keys">
${csrfField(page)}
<label for="key-login">User (username or e-mail; empty: the site's default read-only key)</label><input id="key-login" name="login" type="text">
<label for="key-name">Key name</label><input id="key-name" name="name" type="text" maxlength="100">
<label for="key-days">Expires after (days; empty: never)</label><input id="key-days" name="days" type="number" min="1" max="36500">
<div class="actions"><button type="submit">Create API key</button></div>
</form>`, list));
    };

    app.get('/site', async (request, reply) => show(request, reply));

    app.post('/site/settings', async (request, reply) => {
      if (!base || !await isSiteCustomer(owner(request).customerKey)) throw new NotFound('site');
      try {
        const ttl = Number(field(request.body, 'jwtTtlSeconds'));
        await siteSettings.set({
          methods: fields(request.body, 'method') as SiteMethod[],
          jwtTtlSeconds: ttl,
          editorGroup: field(request.body, 'editorGroup'),
          adminGroup: field(request.body, 'adminGroup'),
        });
      } catch (error) {
        if (error instanceof Invalid) return show(request, reply, { status: 400, notices: [{ kind: 'error', text: error.message }] });
        throw error;
      }
      return reply.redirect(`${ctx.root}/site?done=saved`, 303);
    });

    app.post('/site/api-keys', async (request, reply) => {
      const days = field(request.body, 'days');
      try {
        if (days && !/^[0-9]{1,5}$/.test(days)) throw new Invalid('days', 'must be a number of days');
        const login = field(request.body, 'login');
        const name = field(request.body, 'name');
        const created = await siteApiKeys.create(owner(request).customerId, {
          ...(login ? { login } : {}), ...(name ? { name } : {}),
          ...(days ? { expiresAt: ctx.clock.now() + Number(days) * 86_400_000 } : {}),
        }, request.auditContext);
        return show(request, reply, {
          notices: [{ kind: 'notice', text: `API key ${created.key.name} created.` }],
          created: html`<div class="notice" role="status"><p><strong>New API key</strong> (shown once; copy it now):</p><p><code class="secret" id="site-api-key">${created.apiKey}</code></p></div>`,
        });
      } catch (error) {
        if (error instanceof LatchkeyError && !(error instanceof NotFound && error.entity === 'customer')) {
          return show(request, reply, { status: 400, notices: [{ kind: 'error', text: error.message }] });
        }
        throw error;
      }
    });

    app.post('/site/api-keys/:id/revoke', async (request, reply) => {
      const id = (request.params as { id: string }).id;
      if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('API key');
      await siteApiKeys.revoke(owner(request).customerId, Number(id), request.auditContext);
      return reply.redirect(`${ctx.root}/site?done=revoked`, 303);
    });
  };
}
