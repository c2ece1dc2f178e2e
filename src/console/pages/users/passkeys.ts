/**
 * Removing one of a user's passkeys from the Factors tab (tabs.ts lists them): asks first on a page of
 * its own naming it, then answers with a redirect, so a reload repeats nothing. The same rule as the
 * admin API's users/passkeys/delete: the passkeys service's remove.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { NotFound } from '../../../lib/errors.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { owner, pageContext, sendPage, type ConsoleContext } from '../../context.ts';
import { html } from '../../html.ts';
import { consolePage, postButton } from '../../layout.ts';
import { loadUser, when } from './shared.ts';

function passkeyIdParam(request: FastifyRequest): string {
  const id = (request.params as { passkeyId?: string }).passkeyId ?? '';
  if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('passkey');
  return id;
}

export async function passkeyRoutes(ctx: ConsoleContext, app: FastifyInstance): Promise<void> {
  const { passkeys } = ctx.services;
  const tabUrl = (user: UserWithGroups) => `${ctx.root}/users/${user.id}/factors`;

  app.get('/users/:id/passkeys/:passkeyId/remove', async (request, reply) => {
    const user = await loadUser(ctx, request);
    const id = passkeyIdParam(request);
    const passkey = (await passkeys.list({ customerId: owner(request).customerId, userId: user.id })).find((p) => p.passkeyId === id);
    if (!passkey) return reply.redirect(`${tabUrl(user)}?done=no-passkey`, 303);
    const page = pageContext(ctx, request, reply);
    return sendPage(reply, 200, consolePage(page, 'users', `Remove ${user.username}'s passkey ${passkey.name}?`, html`
<dl class="facts">
<dt>Name</dt><dd>${passkey.name}</dd>
<dt>Created</dt><dd>${when(passkey.createdAt)}</dd>
<dt>Last used</dt><dd>${passkey.lastUsedAt === null ? 'Never' : when(passkey.lastUsedAt)}</dd>
</dl>
<p>The passkey no longer signs the user in. If the user's login policy asks for a passkey, they add a new one at their next sign-in.</p>
<div class="actions">${postButton(page, `/users/${user.id}/passkeys/${passkey.passkeyId}/remove`, 'Remove', { danger: true })}<a href="${tabUrl(user)}">Cancel</a></div>`));
  });

  app.post('/users/:id/passkeys/:passkeyId/remove', async (request, reply) => {
    const user = await loadUser(ctx, request);
    try {
      await passkeys.remove({ customerId: owner(request).customerId, userId: user.id }, passkeyIdParam(request), request.auditContext);
    } catch (error) {
      if (!(error instanceof NotFound)) throw error;
      return reply.redirect(`${tabUrl(user)}?done=no-passkey`, 303);
    }
    return reply.redirect(`${tabUrl(user)}?done=passkey-removed`, 303);
  });
}
