/** Set password: an administrator sets (or resets) a user's password, and may ask for a change at the next sign-in. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../../lib/errors.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { inputField, problemCount, REQUIRED_NOTE, sayProblem, type FieldErrors } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage, csrfField } from '../../layout.ts';
import { loadUser, tabBody } from './shared.ts';

export async function passwordRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const form = (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, status: number, requireChange: boolean, errors: FieldErrors = {}) => {
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, status, consolePage(page, 'users', `Set password for ${user.username}`, tabBody(ctx, user, 'factors', html`
${problemCount(errors)}
${REQUIRED_NOTE}
<form method="post" action="${ctx.root}/users/${user.id}/password" novalidate>
${csrfField(page)}
${inputField({ name: 'newPassword', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', error: errors.newPassword,
    help: '8 to 128 characters; common passwords are refused.' })}
${inputField({ name: 'confirmPassword', label: 'Confirm password', type: 'password', required: true, autocomplete: 'new-password', error: errors.confirmPassword })}
<div class="check"><input type="checkbox" id="requireChange" name="requireChange" value="1"${requireChange ? html` checked` : ''}><label for="requireChange">Require a change at next sign-in</label></div>
<p class="muted">Site credentials issued before the new password (JWTs) stop working.</p>
<div class="actions"><button type="submit">Save password</button> <a href="${ctx.root}/users/${user.id}">Cancel</a></div>
</form>`)));
  };

  app.get('/users/:id/password', async (request, reply) => form(request, reply, await loadUser(ctx, request), 200, false));

  app.post('/users/:id/password', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const body = (request.body ?? {}) as Record<string, unknown>;
    // Passwords are taken as typed (no trimming: a space is a character of a passphrase).
    const password = typeof body.newPassword === 'string' ? body.newPassword : '';
    const confirm = typeof body.confirmPassword === 'string' ? body.confirmPassword : '';
    const requireChange = body.requireChange !== undefined;
    const errors: FieldErrors = {};
    if (password === '') errors.newPassword = 'Enter the new password.';
    if (confirm === '') errors.confirmPassword = 'Enter the new password again.';
    else if (password !== '' && confirm !== password) errors.confirmPassword = 'Confirm password does not match the new password.';
    if (Object.keys(errors).length === 0) {
      try {
        await ctx.services.users.setPassword(owner(request).customerId, user.id, password, { requireChange }, request.auditContext);
        return reply.redirect(`${ctx.root}/users/${user.id}?done=password-set`, 303);
      } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        errors.newPassword = sayProblem('New password', error.message.slice(error.field.length + 1));
      }
    }
    // Passwords are never written back into the page: both are typed again.
    return form(request, reply, user, 400, requireChange, errors);
  });
}
