/**
 * Users: the list (search, sort, numbered pages), create, and each user's page with its tabs (details,
 * group memberships, factors with passkeys, sessions, magic links) and Set password. One file per part under users/.
 */
import type { FastifyInstance } from 'fastify';
import type { ConsoleContext } from '../context.ts';
import { createRoutes } from './users/create.ts';
import { detailsRoutes } from './users/details.ts';
import { listRoutes } from './users/list.ts';
import { passkeyRoutes } from './users/passkeys.ts';
import { passwordRoutes } from './users/password.ts';
import { sessionRoutes } from './users/sessions.ts';
import { tabRoutes } from './users/tabs.ts';

export function userRoutes(ctx: ConsoleContext) {
  return async (app: FastifyInstance): Promise<void> => {
    for (const routes of [listRoutes, createRoutes, detailsRoutes, tabRoutes, passkeyRoutes, sessionRoutes, passwordRoutes]) await routes(ctx, app);
  };
}
