/** Account: the customer key, the API key (revealed on demand, rotatable) and the owner's authenticator. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import { field, owner, pageContext, sendPage, type ConsoleContext } from '../context.ts';
import { html, raw, type Fragment } from '../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../layout.ts';
import { SCRIPT_PAGE_CSP } from '../headers.ts';
import { passkeysSection } from './account-passkeys.ts';

const FLASH_COOKIE = 'lk_console_new_key';
/** Long enough for the redirect, short enough that an unread key does not linger. */
const FLASH_SECONDS = 60;

export function accountRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const show = async (request: FastifyRequest, reply: FastifyReply, extra: { apiKey?: Fragment; notices?: Notice[]; status?: number } = {}) => {
      const me = owner(request);
      const page = pageContext(ctx, request, reply);
      const customer = await ctx.services.customers.findByKey(me.customerKey);
      const passkeys = await ctx.services.passkeys.list({ customerId: me.customerId, userId: null });
      // The passkeys' section runs /assets/passkeys.js.
      reply.header('content-security-policy', SCRIPT_PAGE_CSP);
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
<form method="get" action="${ctx.root}/account/api-key/rotate" class="actions"><button type="submit" class="danger">Rotate API key</button></form>
<p class="muted">Rotating makes a new key at once; requests signed with the old key are refused within seconds.</p>
<h2>Authenticator app</h2>
${me.hasAuthenticator
    ? html`<p>Sign-in asks for a code from your authenticator app.</p><div class="actions">${postButton(page, '/account/authenticator/remove', 'Remove authenticator', { danger: true })}</div>`
    : html`<p>Sign-in asks only for your password. Add an authenticator app for a second factor.</p><div class="actions">${postButton(page, '/account/authenticator', 'Set up authenticator')}</div>`}
${passkeysSection(page, ctx, passkeys)}
`, extra.notices));
    };

    app.get('/account', async (request, reply) => {
      const done = (request.query as Record<string, unknown>).done;
      const notices: Notice[] = done === 'totp-on' ? [{ kind: 'notice', text: 'Authenticator turned on: sign-in now asks for a code.' }]
        : done === 'totp-off' ? [{ kind: 'notice', text: 'Authenticator removed.' }]
          : done === 'passkey-on' ? [{ kind: 'notice', text: 'Passkey added: you may sign in with it.' }]
            : done === 'passkey-off' ? [{ kind: 'notice', text: 'Passkey removed.' }] : [];
      return show(request, reply, { notices });
    });

    app.post('/account/api-key', async (request, reply) => {
      const found = await ctx.services.customers.findForSignature(owner(request).customerKey);
      return show(request, reply, { apiKey: html`<p><span class="muted">API key:</span> <code class="secret" id="api-key">${found?.apiKey ?? ''}</code></p>` });
    });

    // Rotation asks first, and its answer is a redirect: a reload of the page with the new key shows
    // it no more and rotates nothing. The key rides to that page once, in a short-lived cookie sealed
    // to this session (so it is never in a URL, a log or the browser's history).
    const flashPath = `${ctx.root}/account/api-key/rotated`;
    const flashOptions = { path: flashPath, httpOnly: true, sameSite: 'strict' as const, secure: ctx.secureCookies ?? false };
    const aad = (request: FastifyRequest) => `api-key:${request.consoleSession?.idHash ?? ''}`;

    app.get('/account/api-key/rotate', async (request, reply) => {
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, 200, consolePage(page, 'account', 'Rotate API key?', html`
<p>A new API key is made at once. Requests signed with the current key are refused from then on (within seconds on
every node), so every client that signs admin API requests must be given the new key.</p>
<div class="actions">${postButton(page, '/account/api-key/rotate', 'Rotate', { danger: true })}<a href="${ctx.root}/account">Cancel</a></div>`));
    });

    app.post('/account/api-key/rotate', async (request, reply) => {
      const apiKey = await ctx.services.customers.rotateApiKey(owner(request).customerKey, request.auditContext);
      if (ctx.flashSealer) reply.setCookie(FLASH_COOKIE, ctx.flashSealer.seal(apiKey, aad(request)), { ...flashOptions, maxAge: FLASH_SECONDS });
      return reply.redirect(flashPath, 303);
    });

    app.get('/account/api-key/rotated', async (request, reply) => {
      const sealed = request.cookies[FLASH_COOKIE];
      let apiKey: string | undefined;
      if (sealed && ctx.flashSealer) {
        try { apiKey = ctx.flashSealer.open(sealed, aad(request)); } catch { apiKey = undefined; }
        reply.clearCookie(FLASH_COOKIE, flashOptions);
      }
      if (apiKey === undefined) {
        return show(request, reply, { notices: [{ kind: 'notice', text: 'The new API key was shown once, on the page after the rotation. Use Reveal API key to see the current key.' }] });
      }
      return show(request, reply, {
        apiKey: html`<p><span class="muted">New API key:</span> <code class="secret" id="api-key">${apiKey}</code></p><p class="muted">Shown once: copy it now.</p>`,
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
