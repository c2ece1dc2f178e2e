/** Account: the customer key, the API key (revealed on demand, rotatable) and the owner's authenticator. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import { field, owner, pageContext, sendPage, type ConsoleContext } from '../context.ts';
import { html, raw, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';

export function accountRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const show = async (request: FastifyRequest, reply: FastifyReply, extra: { apiKey?: Fragment; notices?: Notice[]; status?: number } = {}) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const customer = await ctx.services.customers.findByKey(me.customerKey);
      return sendPage(reply, extra.status ?? 200, consolePage(page, 'account', 'Account', html`
<dl class="facts">
<dt>Customer key</dt><dd><code class="secret" id="customer-key">${me.customerKey}</code></dd>
<dt>Owner e-mail</dt><dd>${me.email}</dd>
<dt>Name</dt><dd>${me.displayName}</dd>
<dt>Password expiry</dt><dd>${customer?.passwordExpiryDays ? `${customer.passwordExpiryDays} days` : 'Off'}</dd>
</dl>
<h2>API key</h2>
<p>Admin API requests are signed with the customer key and this API key.</p>
${extra.apiKey ?? html`<div class="actions">${postButton(page, '/account/api-key', 'Reveal API key', { secondary: true })}</div>`}
<div class="actions">${postButton(page, '/account/api-key/rotate', 'Rotate API key', { danger: true })}</div>
<p class="muted">Rotating makes a new key at once; requests signed with the old key are refused within seconds.</p>
<h2>Authenticator app</h2>
${me.hasAuthenticator
    ? html`<p>Sign-in asks for a code from your authenticator app.</p><div class="actions">${postButton(page, '/account/authenticator/remove', 'Remove authenticator', { danger: true })}</div>`
    : html`<p>Sign-in asks only for your password. Add an authenticator app for a second factor.</p><div class="actions">${postButton(page, '/account/authenticator', 'Set up authenticator')}</div>`}
`, extra.notices));
    };

    app.get('/account', async (request, reply) => {
      const done = (request.query as Record<string, unknown>).done;
      const notices: Notice[] = done === 'totp-on' ? [{ kind: 'notice', text: 'Authenticator turned on: sign-in now asks for a code.' }]
        : done === 'totp-off' ? [{ kind: 'notice', text: 'Authenticator removed.' }] : [];
      return show(request, reply, { notices });
    });

    app.post('/account/api-key', async (request, reply) => {
      const found = await ctx.services.customers.findForSignature(owner(request).customerKey);
      return show(request, reply, { apiKey: html`<p><span class="muted">API key:</span> <code class="secret" id="api-key">${found?.apiKey ?? ''}</code></p>` });
    });

    app.post('/account/api-key/rotate', async (request, reply) => {
      const apiKey = await ctx.services.customers.rotateApiKey(owner(request).customerKey);
      return show(request, reply, {
        apiKey: html`<p><span class="muted">New API key:</span> <code class="secret" id="api-key">${apiKey}</code></p>`,
        notices: [{ kind: 'notice', text: 'API key rotated. Update your clients with the new key; the old one no longer works.' }],
      });
    });

    const enrolPage = (request: FastifyRequest, reply: FastifyReply, status: number, enrolment: { secret: string; qrSvg?: string }, notices?: Notice[]) => {
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, status, consolePage(page, 'account', 'Set up authenticator', html`
<p>Scan this code with your authenticator app, or type the key by hand, then enter the code it shows.</p>
${enrolment.qrSvg ? html`<div class="qr" role="img" aria-label="QR code of the authenticator key">${raw(enrolment.qrSvg)}</div>` : ''}
<p>Key: <code class="secret" id="totp-secret">${enrolment.secret}</code></p>
<form method="post" action="${ctx.root}/account/authenticator/confirm">
${csrfField(page)}
<input type="hidden" name="secret" value="${enrolment.secret}">
<label for="code">Authenticator code</label>
<input id="code" name="code" type="text" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required>
<div class="actions"><button type="submit">Turn on</button> <a href="${ctx.root}/account">Cancel</a></div>
</form>`, notices));
    };

    app.post('/account/authenticator', async (request, reply) => {
      const enrolment = await ctx.owners.startEnrolment(owner(request).customerId);
      return enrolPage(request, reply, 200, enrolment);
    });

    app.post('/account/authenticator/confirm', async (request, reply) => {
      try {
        await ctx.owners.confirmEnrolment(owner(request).customerId, field(request.body, 'code'));
      } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        // The key is shown again (it is the pending one, which this owner just saw) so the owner can retry.
        return enrolPage(request, reply, 400, { secret: field(request.body, 'secret') }, [{ kind: 'error', text: error.message }]);
      }
      return reply.redirect(`${ctx.root}/account?done=totp-on`, 303);
    });

    app.post('/account/authenticator/remove', async (request, reply) => {
      await ctx.owners.removeAuthenticator(owner(request).customerId);
      return reply.redirect(`${ctx.root}/account?done=totp-off`, 303);
    });
  };
}
