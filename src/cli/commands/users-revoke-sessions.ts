/** `users revoke-sessions`: ends every SSO session of a user (as POST /api/admin/users/sessions/revoke does). */
import { SESSIONS_REVOKED_MESSAGE } from '../../identity/sso-sessions/routes.ts';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

export const usersRevokeSessions: Command = {
  name: 'users revoke-sessions',
  usage: 'users revoke-sessions --customer-key K --username U [--json]',
  summary: "End every SSO session of a user on every node: each of the user's browsers signs in again at its next request.",
  options: { 'customer-key': 'the numeric customer key (customer list shows it)', 'username': "the user's username or e-mail" },
  async run(args, { app, auditContext }) {
    if (args.positionals.length > 2) throw new UsageError(`unexpected argument ${args.positionals[2]}`);
    const customerId = await customerIdOf(args, app);
    const login = stringFlag(args, 'username', true);
    const user = await app.services.users.getWithGroups(customerId, login);
    await app.services.ssoSessions.endAllForUser(customerId, user, auditContext);
    return {
      json: { username: user.username, status: 'SUCCESS', message: SESSIONS_REVOKED_MESSAGE },
      text: `Sessions of ${user.username} revoked: each of their browsers signs in again.`,
    };
  },
};
