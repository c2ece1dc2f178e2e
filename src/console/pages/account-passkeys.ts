/**
 * The console owner's passkeys on the console's account page (holder { customerId, userId: null }):
 * the list with `Remove`, and `Add a passkey` (field `Passkey name`) through the served
 * /assets/passkeys.js, whose JSON calls carry the page's CSRF token.
 */
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Invalid, NotFound } from '../../lib/errors.ts';
import type { PasskeySummary } from '../../identity/passkeys/types.ts';
import { owner, type ConsoleContext } from '../context.ts';
import { html, type Html } from '../html.ts';
import { csrfField, postButton, type PageContext } from '../layout.ts';

const minuteUtc = (ms: number) => `${new Date(ms).toISOString().slice(0, 16)}Z`;

export function passkeysSection(page: PageContext, ctx: ConsoleContext, passkeys: PasskeySummary[]): Html {
  const list = passkeys.length === 0 ? html`<p>You have no passkeys. With one you sign in without your password or an authenticator code.</p>`
    : html`<ul class="passkeys">${passkeys.map((passkey) => html`<li><strong>${passkey.name}</strong> — created ${minuteUtc(passkey.createdAt)}, last used ${passkey.lastUsedAt === null ? 'never' : minuteUtc(passkey.lastUsedAt)}
${postButton(page, `/account/passkeys/${encodeURIComponent(passkey.passkeyId)}/remove`, 'Remove', { danger: true })}</li>`)}</ul>`;
  return html`<h2 id="passkeys">Passkeys</h2>
${list}
<form>
${csrfField(page)}
<label for="passkey-name">Passkey name</label>
<input id="passkey-name" name="name" type="text" maxlength="64" autocomplete="off">
<div class="actions"><button type="button" data-passkey="register" data-options-url="${ctx.root}/account/passkeys/options" data-verify-url="${ctx.root}/account/passkeys">Add a passkey</button></div>
</form>
<script src="/assets/passkeys.js" defer></script>`;
}

export function accountPasskeyRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    const { passkeys } = ctx.services;
    const holder = (customerId: number) => ({ customerId, userId: null });
    const json = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).send(body);

    app.post('/account/passkeys/options', async (request, reply) => {
      const me = owner(request);
      return json(reply, 200, await passkeys.registrationOptions(holder(me.customerId), { username: me.email, displayName: me.displayName }));
    });

    app.post('/account/passkeys', async (request, reply) => {
      const me = owner(request);
      const body = request.body as { ceremonyId?: unknown; response?: unknown; name?: unknown } | undefined;
      if (typeof body?.ceremonyId !== 'string' || typeof body.response !== 'object' || body.response === null) {
        return json(reply, 400, { message: 'The passkey could not be added: start again.' });
      }
      try {
        await passkeys.register(holder(me.customerId), body.ceremonyId, body.response as RegistrationResponseJSON,
          typeof body.name === 'string' ? body.name : undefined, request.headers['user-agent'], request.auditContext);
      } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        return json(reply, 400, { message: `The passkey could not be added: ${error.message}.` });
      }
      return json(reply, 200, { location: `${ctx.root}/account?done=passkey-on` });
    });

    app.post<{ Params: { passkeyId: string } }>('/account/passkeys/:passkeyId/remove', async (request, reply) => {
      try {
        await passkeys.remove(holder(owner(request).customerId), request.params.passkeyId, request.auditContext);
      } catch (error) {
        if (!(error instanceof NotFound)) throw error;
      }
      return reply.redirect(`${ctx.root}/account?done=passkey-off`, 303);
    });
  };
}
