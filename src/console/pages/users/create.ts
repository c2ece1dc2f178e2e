/** Create user: every problem shown beside its field at once, what was typed kept (but the password). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UserInput } from '../../../identity/users/types.ts';
import { EMAIL, PERSON_NAME, USERNAME } from '../../../identity/users/rules.ts';
import { field, owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { errorsOf, inputField, problemCount, REQUIRED_NOTE, toFieldErrors, type FieldErrors } from '../../forms.ts';
import { html } from '../../html.ts';
import { consolePage, csrfField } from '../../layout.ts';

export const CREATE_LABELS: Record<string, string> = {
  username: 'Username', email: 'E-mail', password: 'Password', firstName: 'First name', lastName: 'Last name',
};
const OTHER = { name: 'username', label: 'User' };

export async function createRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const form = (request: FastifyRequest, reply: FastifyReply, status: number, values: Record<string, string>, errors: FieldErrors = {}) => {
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, status, consolePage(page, 'users', 'Create user', html`
${problemCount(errors)}
${REQUIRED_NOTE}
<form method="post" action="${ctx.root}/users/new" novalidate>
${csrfField(page)}
${inputField({ name: 'username', label: 'Username', required: true, maxLength: USERNAME.maxLength, autocomplete: 'off', value: values.username, error: errors.username })}
${inputField({ name: 'email', label: 'E-mail', type: 'email', maxLength: EMAIL.maxLength, autocomplete: 'off', value: values.email, error: errors.email,
    help: 'Required unless the username is an e-mail address.' })}
${inputField({ name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password', error: errors.password,
    help: '8 to 128 characters. Leave empty for a user who signs in by magic link only.' })}
${inputField({ name: 'firstName', label: 'First name', maxLength: PERSON_NAME.maxLength, value: values.firstName, error: errors.firstName })}
${inputField({ name: 'lastName', label: 'Last name', maxLength: PERSON_NAME.maxLength, value: values.lastName, error: errors.lastName })}
<div class="actions"><button type="submit">Create</button> <a href="${ctx.root}/users">Cancel</a></div>
</form>`));
  };

  app.get('/users/new', async (request, reply) => form(request, reply, 200, {}));

  app.post('/users/new', async (request, reply) => {
    const values = Object.fromEntries(['username', 'email', 'firstName', 'lastName'].map((k) => [k, field(request.body, k)]));
    const raw = (request.body as Record<string, unknown> | undefined)?.password;
    const password = typeof raw === 'string' && raw !== '' ? raw : undefined;
    // An empty e-mail is none given: a username that is an e-mail then serves (as users/create without one).
    const input: UserInput = {
      username: values.username!, email: values.email || undefined, firstName: values.firstName, lastName: values.lastName,
      password, customAttributes: {},
    };
    const { users } = ctx.services;
    const problems = users.findProblems(input, 'create');
    if (problems.length > 0) return form(request, reply, 400, values, toFieldErrors(problems, CREATE_LABELS, OTHER));
    try {
      const user = await users.create(owner(request).customerId, input, request.auditContext);
      return reply.redirect(`${ctx.root}/users/${user.id}?done=created`, 303);
    } catch (error) {
      const errors = errorsOf(error, CREATE_LABELS, OTHER);
      if (errors) return form(request, reply, 400, values, errors);
      throw error;
    }
  });
}
