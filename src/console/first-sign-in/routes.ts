/**
 * The owner's one-time sign-in link (`/console/first-sign-in/<token>`): GET shows the password form and
 * never uses the link; POST sets the password, uses the link and signs the owner in (into the code step
 * when the owner already has an authenticator). A used, expired or unknown link answers 410 with a page
 * that says which and leads to the sign-in form.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import { pageContext, sendPage, type ConsoleContext } from '../context.ts';
import { setSessionCookie } from '../cookies.ts';
import { html, type Html } from '../html.ts';
import { csrfField, plainPage } from '../layout.ts';
import type { ConsoleFirstSignInService, FirstSignInState } from './service.ts';

type Dead = Exclude<FirstSignInState['state'], 'valid'>;

const DEAD: Record<Dead, string> = {
  used: 'This sign-in link has already been used. Each link works once.',
  expired: 'This sign-in link has expired. Links work for 15 minutes.',
  unknown: 'This sign-in link is not valid. Check that it was copied whole.',
};

interface FieldErrors { newPassword?: string; confirmPassword?: string }

export function firstSignInRoutes(ctx: ConsoleContext, firstSignIn: ConsoleFirstSignInService, cookie: { secure: boolean }) {
  return async (app: FastifyInstance): Promise<void> => {
    const form = (request: FastifyRequest, reply: FastifyReply, status: number, token: string, errors: FieldErrors = {}) => {
      const page = pageContext(ctx, request, reply);
      const error = (id: string, text: string | undefined): Html | string => (text ? html`<p class="error" id="${id}-error">${text}</p>` : '');
      const describedBy = (id: string, text: string | undefined) => (text ? html` aria-invalid="true" aria-describedby="${id}-error"` : '');
      const list = errors.newPassword || errors.confirmPassword ? [{ kind: 'error' as const, text: 'The password was not set. Correct the fields below.' }] : undefined;
      return sendPage(reply, status, plainPage(page, 'Set your console password', html`
<p>Choose the password you will sign in with. It needs 8 to 128 characters; common passwords are refused.</p>
<form method="post" action="${ctx.root}/first-sign-in/${token}">
${csrfField(page)}
<label for="new-password">New password</label>
<input id="new-password" name="newPassword" type="password" autocomplete="new-password" required${describedBy('new-password', errors.newPassword)} autofocus>
${error('new-password', errors.newPassword)}
<label for="confirm-password">Confirm password</label>
<input id="confirm-password" name="confirmPassword" type="password" autocomplete="new-password" required${describedBy('confirm-password', errors.confirmPassword)}>
${error('confirm-password', errors.confirmPassword)}
<div class="actions"><button type="submit">Set password</button></div>
</form>`, list));
    };
    const dead = (request: FastifyRequest, reply: FastifyReply, state: Dead) => sendPage(reply, 410, plainPage(pageContext(ctx, request, reply), 'Sign-in link not usable',
      html`<p role="alert">${DEAD[state]}</p><p><a href="${ctx.root}/sign-in">Go to the sign-in page</a></p>
<p>To get in without a link, set a password with <code>npx latchkey customer set-password --customer-key K --password P</code>.</p>`));
    const tokenOf = (request: FastifyRequest) => (request.params as { token: string }).token;

    app.get('/first-sign-in/:token', async (request, reply) => {
      const token = tokenOf(request);
      const link = await firstSignIn.check(token);
      return link.state === 'valid' ? form(request, reply, 200, token) : dead(request, reply, link.state);
    });

    app.post('/first-sign-in/:token', async (request, reply) => {
      const token = tokenOf(request);
      const body = (request.body ?? {}) as Record<string, unknown>;
      const password = typeof body.newPassword === 'string' ? body.newPassword : '';
      const confirmation = typeof body.confirmPassword === 'string' ? body.confirmPassword : '';
      const errors: FieldErrors = {};
      if (!password) errors.newPassword = 'Enter a new password.';
      if (!confirmation) errors.confirmPassword = 'Enter the password again.';
      else if (password && confirmation !== password) errors.confirmPassword = 'The two passwords are not the same.';
      if (errors.newPassword || errors.confirmPassword) {
        const link = await firstSignIn.check(token);
        return link.state === 'valid' ? form(request, reply, 400, token, errors) : dead(request, reply, link.state);
      }
      let link: FirstSignInState;
      try {
        link = await firstSignIn.use(token, password);
      } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        return form(request, reply, 400, token, { newPassword: `The password ${error.message.slice(error.field.length + 1)}.` });
      }
      if (link.state !== 'valid') return dead(request, reply, link.state);
      // A new password ends every console session of the owner, as set-password does.
      await ctx.sessions.endAll(link.customerId);
      const owner = await ctx.owners.findById(link.customerId);
      const stage = owner?.hasAuthenticator ? 'code' : 'active';
      setSessionCookie(reply, ctx.root, cookie.secure, await ctx.sessions.create(link.customerId, stage));
      return reply.redirect(`${ctx.root}/${stage === 'code' ? 'sign-in' : 'account'}`, 303);
    });
  };
}
