/**
 * HTTP for /admin/users/sessions/revoke: ends every SSO session of a user (each browser's next request
 * to the customer's sign-in starts at step 1). Wire shapes only; the sessions' rules are in service.ts.
 */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema, nameString } from '../../http/schemas.ts';
import type { UsersService } from '../users/service.ts';
import type { SsoSessionsService } from './service.ts';

export const SESSIONS_REVOKED_MESSAGE = "The user's sessions have been revoked.";

export interface SsoSessionRoutesOptions {
  ssoSessions: Pick<SsoSessionsService, 'endAllForUser'>;
  users: Pick<UsersService, 'getWithGroups'>;
}

export async function ssoSessionRoutes(app: FastifyInstance, opts: SsoSessionRoutesOptions): Promise<void> {
  const { ssoSessions, users } = opts;

  app.post('/admin/users/sessions/revoke', {
    // An unknown user answers as users/get does for one.
    config: { adminErrors: 'get-user' },
    schema: {
      tags: ['Users'],
      summary: "Extension: end every SSO session of a user (username or e-mail) on every node; the user's next sign-in starts afresh",
      body: {
        type: 'object',
        required: ['customerKey', 'username'],
        properties: { customerKey: customerKeySchema, username: nameString(255) },
      },
      response: {
        200: { type: 'object', properties: { status: { type: 'string' }, message: { type: 'string' } } },
      },
    },
  }, async (request) => {
    const user = await users.getWithGroups(request.customer.id, (request.body as { username: string }).username);
    await ssoSessions.endAllForUser(request.customer.id, user, request.auditContext);
    request.log.info({ userId: user.id }, 'sso sessions revoked');
    return { status: 'SUCCESS', message: SESSIONS_REVOKED_MESSAGE };
  });
}

/** The route as an `areas` entry of the admin API. */
export const ssoSessionsArea = (opts: SsoSessionRoutesOptions) => (app: FastifyInstance) => ssoSessionRoutes(app, opts);
