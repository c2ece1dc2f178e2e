/** What the users pages share: the user named by the URL, the page frame with its tabs, notices, dates. */
import type { FastifyRequest } from 'fastify';
import { NotFound } from '../../../lib/errors.ts';
import type { UserWithGroups } from '../../../identity/users/types.ts';
import { owner, query, type ConsoleContext } from '../../context.ts';
import { html, type Fragment, type Html } from '../../html.ts';
import type { Notice } from '../../layout.ts';

export const NOTICES: Record<string, string> = {
  created: 'User created.',
  saved: 'Changes saved.',
  disabled: 'User disabled: their sign-ins and site credentials stop working.',
  enabled: 'User enabled.',
  'mfa-reset': 'Authenticator removed: the user signs in without a code until they set one up again.',
  'passkey-removed': 'Passkey removed: it no longer signs the user in.',
  'no-passkey': 'That passkey had already been removed.',
  'groups-saved': 'Groups saved.',
  'link-sent': 'Magic link generated and queued for e-mail.',
  'links-revoked': 'Open magic links revoked.',
  'no-links': 'There was no open magic link to revoke.',
  'session-revoked': 'Session revoked: that browser signs in again at its next request.',
  'sessions-revoked': 'Sessions revoked: each browser of the user signs in again at its next request.',
  'no-session': 'That session had already ended.',
  'password-set': 'Password saved. Site credentials issued before it no longer work.',
  deleted: 'User deleted.',
};

export function noticeOf(request: FastifyRequest): Notice[] {
  const done = query(request, 'done');
  return NOTICES[done] ? [{ kind: 'notice', text: NOTICES[done] }] : [];
}

function idParam(request: FastifyRequest): number {
  const id = (request.params as { id?: string }).id ?? '';
  if (!/^[0-9]{1,15}$/.test(id)) throw new NotFound('user');
  return Number(id);
}

/** The user the URL names, of the signed-in owner's customer. @throws NotFound */
export async function loadUser(ctx: ConsoleContext, request: FastifyRequest): Promise<UserWithGroups> {
  const user = await ctx.services.users.findByIdWithGroups(owner(request).customerId, idParam(request));
  if (!user || user.markForDeletion) throw new NotFound('user');
  return user;
}

/** "2026-11-27 16:20 UTC". */
export const when = (ms: number): string => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export type Tab = 'details' | 'groups' | 'factors' | 'sessions' | 'magic-links';

const TABS: [Tab, string, string][] = [
  ['details', 'Details', ''],
  ['groups', 'Group memberships', '/groups'],
  ['factors', 'Factors', '/factors'],
  ['sessions', 'Sessions', '/sessions'],
  ['magic-links', 'Magic links', '/magic-links'],
];

/** The user's sections as tabs: plain links to sub-pages, the current one marked. */
export function tabs(ctx: ConsoleContext, user: UserWithGroups, current: Tab): Html {
  return html`<nav class="tabs" aria-label="User sections"><ul>
${TABS.map(([id, label, path]) => html`<li><a href="${ctx.root}/users/${user.id}${path}"${id === current ? html` aria-current="page"` : ''}>${label}</a></li>`)}
</ul></nav>`;
}

/** A tab's body under the user's tabs. */
export function tabBody(ctx: ConsoleContext, user: UserWithGroups, current: Tab, body: Fragment): Html {
  return html`<p class="muted"><a href="${ctx.root}/users">All users</a> · <a href="${ctx.root}/audit?${new URLSearchParams({ user: user.username }).toString()}">Events</a></p>${tabs(ctx, user, current)}<div class="tab-panel">${body}</div>`;
}
