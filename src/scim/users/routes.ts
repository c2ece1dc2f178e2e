/**
 * /scim/v2/Users (RFC 7644 §3): list with filter and paging, create, read, replace, patch, delete.
 * HTTP only: the provisioning service holds the rules; mapping.ts and patch.ts the wire.
 */
import type { FastifyInstance } from 'fastify';
import type { UserField, UserProvisioningService } from '../../identity/users/provisioning.ts';
import { ScimError } from '../errors.ts';
import { parseFilter, TEXT_SEARCH, WHOLE_VALUE, type FilterAttributes } from '../filter.ts';
import { listResponse, readPaging } from '../list.ts';
import { readPatchBody } from '../patch.ts';
import { USER_SCHEMA } from '../schemas.ts';
import { sendScim, type ScimRouteOptions } from '../send.ts';
import { changedFrom, readUserResource, toScimUser } from './mapping.ts';
import { patchUserResource } from './patch.ts';

/** The attributes a Users filter may name (DESIGN: userName, emails.value, externalId; id and active besides). */
const FILTERS: FilterAttributes<UserField> = {
  username: { field: 'username', operators: TEXT_SEARCH },
  'emails.value': { field: 'email', operators: TEXT_SEARCH },
  emails: { field: 'email', operators: TEXT_SEARCH },
  externalid: { field: 'externalId', operators: TEXT_SEARCH },
  id: { field: 'guid', operators: WHOLE_VALUE },
  active: { field: 'enabled', operators: ['eq', 'ne'], type: 'boolean' },
};

export async function scimUserRoutes(app: FastifyInstance, opts: ScimRouteOptions & { users: UserProvisioningService }): Promise<void> {
  const { users, baseUrl } = opts;
  const hide = { schema: { hide: true } };
  const idOf = (params: unknown) => (params as { id: string }).id;

  app.get('/Users', hide, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const condition = query.filter === undefined ? undefined : parseFilter(query.filter, FILTERS, USER_SCHEMA);
    const { startIndex, count } = readPaging(query);
    const { users: found, total } = await users.find(request.scimToken.customerId, { condition, offset: startIndex - 1, limit: count });
    return sendScim(reply, 200, listResponse(found.map((u) => toScimUser(u, baseUrl)), total, startIndex));
  });

  app.post('/Users', hide, async (request, reply) => {
    const { username, input, isEnabled } = readUserResource(request.body, 'create');
    const user = await users.create(request.scimToken.customerId, { ...input, username: username! }, { isEnabled: isEnabled ?? true }, request.auditContext);
    const resource = toScimUser(user, baseUrl);
    reply.header('location', (resource.meta as { location: string }).location);
    return sendScim(reply, 201, resource);
  });

  app.get('/Users/:id', hide, async (request, reply) => {
    return sendScim(reply, 200, toScimUser(await users.get(request.scimToken.customerId, idOf(request.params)), baseUrl));
  });

  app.put('/Users/:id', hide, async (request, reply) => {
    const customerId = request.scimToken.customerId;
    const resource = readUserResource(request.body, 'replace');
    if (resource.username === undefined) throw new ScimError(400, 'invalidValue', 'userName is required');
    const current = await users.get(customerId, idOf(request.params));
    const user = await users.change(customerId, current.guid, changedFrom(current, resource), request.auditContext);
    return sendScim(reply, 200, toScimUser(user, baseUrl));
  });

  app.patch('/Users/:id', hide, async (request, reply) => {
    const customerId = request.scimToken.customerId;
    const operations = readPatchBody(request.body);
    const current = await users.get(customerId, idOf(request.params));
    const patched = patchUserResource(toScimUser(current, baseUrl), operations);
    if (typeof patched.userName !== 'string') throw new ScimError(400, 'mutability', 'userName cannot be removed');
    const user = await users.change(customerId, current.guid, changedFrom(current, readUserResource(patched, 'replace')), request.auditContext);
    return sendScim(reply, 200, toScimUser(user, baseUrl));
  });

  app.delete('/Users/:id', hide, async (request, reply) => {
    await users.remove(request.scimToken.customerId, idOf(request.params), request.auditContext);
    return reply.code(204).send();
  });
}

