/** A user's Details tab: facts, Set password, Disable/Enable, Delete user (asks first), and the attributes form. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../../lib/errors.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { EMAIL, isCustomAttributeName, PERSON_NAME, PHONE } from '../../../identity/users/rules.ts';
import { field, owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { errorsOf, inputField, parseAttributeLines, problemCount, REQUIRED_NOTE, textareaField, toFieldErrors, type FieldErrors } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage, csrfField, postButton, type Notice } from '../../layout.ts';
import { loadUser, noticeOf, tabBody, when } from './shared.ts';

const EDIT_LABELS: Record<string, string> = {
  email: 'E-mail', firstName: 'First name', lastName: 'Last name', phone: 'Phone', alternateEmail: 'Alternate e-mail', customAttributes: 'Custom attributes',
};
// Any other field a rule names is a custom attribute's (its name is the field).
const OTHER = { name: 'customAttributes', label: 'Custom attributes' };

export async function detailsRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const { users, mfa } = ctx.services;

  const show = async (request: FastifyRequest, reply: FastifyReply, user: UserWithGroups, status = 200,
    typed?: Record<string, string>, errors: FieldErrors = {}, notices: Notice[] = noticeOf(request)) => {
    const page = pageContext(ctx, request, reply);
    const [hasMfa, lastSignIn] = await Promise.all([
      mfa.hasActiveAuthenticator(owner(request).customerId, user.id),
      users.findLastSignIn(owner(request).customerId, user.id),
    ]);
    const base = `/users/${user.id}`;
    const values = typed ?? {
      email: user.email, firstName: user.firstName, lastName: user.lastName, phone: user.phone, alternateEmail: user.alternateEmail,
      customAttributes: Object.entries(user.customAttributes).filter(([k]) => isCustomAttributeName(k)).map(([k, v]) => `${k}=${v}`).join('\n'),
    };
    return sendPage(reply, status, consolePage(page, 'users', user.username, tabBody(ctx, user, 'details', html`
<dl class="facts">
<dt>Username</dt><dd>${user.username}</dd>
<dt>E-mail</dt><dd>${user.email}</dd>
<dt>Status</dt><dd id="status">${user.isDisabled ? 'Disabled' : 'Active'}</dd>
<dt>Password</dt><dd id="password-state">${!user.hasPassword ? 'None (signs in by magic link)' : user.passwordChangeRequired ? 'Set; must be changed at the next sign-in' : 'Set'}</dd>
<dt>Second factor</dt><dd>${hasMfa ? 'Authenticator app' : 'None'}</dd>
<dt>Groups</dt><dd>${user.groups.join(', ') || 'None'}</dd>
<dt>Created</dt><dd>${when(user.createdAt)}</dd>
<dt>Last sign-in</dt><dd id="last-sign-in">${lastSignIn ? when(lastSignIn) : 'Never'}</dd>
</dl>
<div class="actions">
<form method="get" action="${ctx.root}${base}/password"><button type="submit" class="secondary">Set password</button></form>
${user.isDisabled ? postButton(page, `${base}/enable`, 'Enable', { secondary: true }) : postButton(page, `${base}/disable`, 'Disable', { secondary: true })}
${hasMfa ? postButton(page, `${base}/reset-mfa`, 'Reset MFA', { secondary: true }) : ''}
<form method="get" action="${ctx.root}${base}/delete"><button type="submit" class="danger">Delete user</button></form>
</div>

<h2>Attributes</h2>
${problemCount(errors)}
${REQUIRED_NOTE}
<form method="post" action="${ctx.root}${base}/edit" novalidate>
${csrfField(page)}
${inputField({ name: 'email', label: 'E-mail', type: 'email', required: true, maxLength: EMAIL.maxLength, value: values.email, error: errors.email })}
${inputField({ name: 'firstName', label: 'First name', maxLength: PERSON_NAME.maxLength, value: values.firstName, error: errors.firstName })}
${inputField({ name: 'lastName', label: 'Last name', maxLength: PERSON_NAME.maxLength, value: values.lastName, error: errors.lastName })}
${inputField({ name: 'phone', label: 'Phone', maxLength: PHONE.maxLength, value: values.phone, error: errors.phone })}
${inputField({ name: 'alternateEmail', label: 'Alternate e-mail', type: 'email', maxLength: EMAIL.maxLength, value: values.alternateEmail, error: errors.alternateEmail })}
${textareaField({ name: 'customAttributes', label: 'Custom attributes', value: values.customAttributes, error: errors.customAttributes,
    help: 'One per line: customAttribute1=value … customAttribute50=value. Remove a line to clear it.' })}
<div class="actions"><button type="submit">Save</button></div>
</form>
`), notices));
  };

  app.get('/users/:id', async (request, reply) => show(request, reply, await loadUser(ctx, request)));

  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/users/:id/${action}`, async (request, reply) => {
      const user = await loadUser(ctx, request);
      await users.setDisabled(owner(request).customerId, user.username, disabled, request.auditContext);
      return reply.redirect(`${ctx.root}/users/${user.id}?done=${action}d`, 303);
    });
  }

  app.post('/users/:id/edit', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const typed = Object.fromEntries(['email', 'firstName', 'lastName', 'phone', 'alternateEmail'].map((k) => [k, field(request.body, k)]));
    const rawAttributes = (request.body as Record<string, unknown> | undefined)?.customAttributes;
    typed.customAttributes = typeof rawAttributes === 'string' ? rawAttributes : '';
    const refuse = (errors: FieldErrors) => show(request, reply, user, 400, typed, errors, []);
    let given: Record<string, string>;
    try {
      given = parseAttributeLines(typed.customAttributes, 'customAttributes', 'customAttributeN=value');
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      given = {};
      typed.attributeLineError = error.message.slice(error.field.length + 1);
    }
    // The service merges attributes: one removed from the text is cleared explicitly ("" clears).
    const stored = Object.keys(user.customAttributes).filter(isCustomAttributeName);
    const input = {
      username: user.username, email: typed.email, firstName: typed.firstName, lastName: typed.lastName, phone: typed.phone,
      alternateEmail: typed.alternateEmail, customAttributes: { ...Object.fromEntries(stored.map((k) => [k, ''])), ...given },
    };
    const problems = users.findProblems(input, 'update');
    if (typed.attributeLineError) problems.push({ field: 'customAttributes', reason: typed.attributeLineError });
    if (problems.length > 0) return refuse(toFieldErrors(problems, EDIT_LABELS, OTHER));
    try {
      await users.update(owner(request).customerId, input, request.auditContext);
    } catch (error) {
      const errors = errorsOf(error, EDIT_LABELS, OTHER);
      if (errors) return refuse(errors);
      throw error;
    }
    return reply.redirect(`${ctx.root}/users/${user.id}?done=saved`, 303);
  });

  app.post('/users/:id/reset-mfa', async (request, reply) => {
    const user = await loadUser(ctx, request);
    await mfa.reset(owner(request).customerId, user.username, request.auditContext);
    const back = (request.body as Record<string, unknown> | undefined)?.from === 'factors' ? '/factors' : '';
    return reply.redirect(`${ctx.root}/users/${user.id}${back}?done=mfa-reset`, 303);
  });

  app.get('/users/:id/delete', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', `Delete ${user.username}?`, html`
<p>The user <strong>${user.username}</strong> (${user.email}) is deleted: they can no longer sign in, and their site credentials stop working. This cannot be undone.</p>
<div class="actions">${postButton(page, `/users/${user.id}/delete`, 'Delete', { danger: true })}<a href="${ctx.root}/users/${user.id}">Cancel</a></div>`));
  });

  app.post('/users/:id/delete', async (request, reply) => {
    const user = await loadUser(ctx, request);
    await users.remove(owner(request).customerId, user.username, request.auditContext);
    return reply.redirect(`${ctx.root}/users?done=deleted`, 303);
  });
}
