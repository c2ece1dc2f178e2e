/**
 * The console owner's sign-in with a passkey: the e-mail, then `Use a passkey` (the served
 * /assets/passkeys.js and two JSON calls carrying the page's CSRF token). A passkey signs the owner
 * straight in: it asks for user verification, so no authenticator code follows it.
 */
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import { field, pageContext, sendPage, type ConsoleContext } from '../context.ts';
import { setSessionCookie } from '../cookies.ts';
import { SCRIPT_PAGE_CSP } from '../headers.ts';
import { html } from '../html.ts';
import { csrfField, plainPage } from '../layout.ts';

const NO_PASSKEY = 'No passkey is registered for this e-mail. Sign in with your password.';
const REFUSED = 'The passkey was not accepted.';

export function signInPasskeyRoutes(ctx: ConsoleContext, cookie: { secure: boolean }) {
  return async (app: FastifyInstance): Promise<void> => {
    const json = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).send(body);

    app.get('/sign-in/passkey', async (request, reply) => {
      if (request.consoleSession?.stage === 'active') return reply.redirect(`${ctx.root}/account`, 303);
      const page = pageContext(ctx, request, reply);
      reply.header('content-security-policy', SCRIPT_PAGE_CSP);
      return sendPage(reply, 200, plainPage(page, 'Sign in with a passkey', html`
<form>
${csrfField(page)}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus>
<div class="actions"><button type="button" data-passkey="authenticate" data-options-url="${ctx.root}/sign-in/passkey/options" data-verify-url="${ctx.root}/sign-in/passkey">Use a passkey</button></div>
</form>
<p><a href="${ctx.root}/sign-in">Sign in with your password</a></p>
<script src="/assets/passkeys.js" defer></script>`));
    });

    app.post('/sign-in/passkey/options', async (request, reply) => {
      const started = await ctx.ownerPasskeys.signInOptions(field(request.body, 'email'));
      if (!started) return json(reply, 400, { message: NO_PASSKEY });
      return json(reply, 200, started);
    });

    app.post('/sign-in/passkey', async (request, reply) => {
      const body = request.body as { ceremonyId?: unknown; response?: unknown } | undefined;
      if (typeof body?.ceremonyId !== 'string' || typeof body.response !== 'object' || body.response === null) return json(reply, 400, { message: REFUSED });
      let customerId;
      try {
        customerId = await ctx.ownerPasskeys.signIn(field(request.body, 'email'), body.ceremonyId, body.response as AuthenticationResponseJSON);
      } catch (error) {
        if (error instanceof Invalid) return json(reply, 400, { message: REFUSED });
        throw error;
      }
      if (request.consoleSession) await ctx.sessions.end(request.consoleSession);
      setSessionCookie(reply, ctx.root, cookie.secure, await ctx.sessions.create(customerId, 'active'));
      return json(reply, 200, { location: `${ctx.root}/account` });
    });
  };
}
