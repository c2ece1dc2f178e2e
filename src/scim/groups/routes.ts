/**
 * /scim/v2/Groups (RFC 7644 §3): list with filter and paging, create with members, read, replace,
 * patch (204: the group's members are never read to answer it), delete. `excludedAttributes=members`
 * (or `attributes` without members) leaves the members out, as Entra ID and Okta ask.
 */
import type { FastifyInstance } from 'fastify';
import type { GroupField, GroupProvisioningService } from '../../identity/groups/provisioning.ts';
import type { Group } from '../../identity/groups/types.ts';
import { parseFilter, TEXT_SEARCH, WHOLE_VALUE, type FilterAttributes } from '../filter.ts';
import { attributeNames, listResponse, readPaging } from '../list.ts';
import { readPatchBody } from '../patch.ts';
import { GROUP_SCHEMA } from '../schemas.ts';
import { sendScim, type ScimRouteOptions } from '../send.ts';
import { readGroupResource, toScimGroup } from './mapping.ts';
import { readGroupPatch } from './patch.ts';

/** The attributes a Groups filter may name (DESIGN: displayName, externalId; id and members.value besides). */
const FILTERS: FilterAttributes<GroupField> = {
  displayname: { field: 'name', operators: TEXT_SEARCH },
  externalid: { field: 'externalId', operators: TEXT_SEARCH },
  id: { field: 'id', operators: ['eq', 'ne'] },
  'members.value': { field: 'memberGuid', operators: WHOLE_VALUE },
  members: { field: 'memberGuid', operators: WHOLE_VALUE },
};

/** Whether the answer carries members (RFC 7644 §3.4.2.5's attributes and excludedAttributes). */
function wantsMembers(query: Record<string, unknown>): boolean {
  if (attributeNames(query.excludedAttributes).has('members')) return false;
  const only = attributeNames(query.attributes);
  return only.size === 0 || only.has('members');
}

export async function scimGroupRoutes(app: FastifyInstance, opts: ScimRouteOptions & { groups: GroupProvisioningService }): Promise<void> {
  const { groups, baseUrl } = opts;
  const hide = { schema: { hide: true } };

  /** The group's id from the path: not a number is no group (404). */
  const idOf = (params: unknown): number => {
    const raw = (params as { id: string }).id;
    return /^[0-9]{1,15}$/.test(raw) ? Number(raw) : 0;
  };

  async function withMembers(customerId: number, list: Group[], include: boolean) {
    const members = include ? await groups.members(customerId, list.map((g) => g.id)) : undefined;
    return list.map((g) => toScimGroup(g, members?.get(g.id), baseUrl));
  }

  app.get('/Groups', hide, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const customerId = request.scimToken.customerId;
    const condition = query.filter === undefined ? undefined : parseFilter(query.filter, FILTERS, GROUP_SCHEMA);
    const { startIndex, count } = readPaging(query);
    const { groups: found, total } = await groups.find(customerId, { condition, offset: startIndex - 1, limit: count });
    return sendScim(reply, 200, listResponse(await withMembers(customerId, found, wantsMembers(query)), total, startIndex));
  });

  app.post('/Groups', hide, async (request, reply) => {
    const customerId = request.scimToken.customerId;
    const { name, externalId, memberGuids } = readGroupResource(request.body);
    const group = await groups.create(customerId, { name, externalId, memberGuids }, request.auditContext);
    const [resource] = await withMembers(customerId, [group], true);
    reply.header('location', (resource.meta as { location: string }).location);
    return sendScim(reply, 201, resource);
  });

  app.get('/Groups/:id', hide, async (request, reply) => {
    const customerId = request.scimToken.customerId;
    const group = await groups.get(customerId, idOf(request.params));
    const [resource] = await withMembers(customerId, [group], wantsMembers(request.query as Record<string, unknown>));
    return sendScim(reply, 200, resource);
  });

  app.put('/Groups/:id', hide, async (request, reply) => {
    const customerId = request.scimToken.customerId;
    const groupId = idOf(request.params);
    const { name, externalId, memberGuids } = readGroupResource(request.body);
    await groups.change(customerId, groupId, { name, externalId: externalId ?? '', members: [{ op: 'replace', guids: memberGuids }] }, request.auditContext);
    const [resource] = await withMembers(customerId, [await groups.get(customerId, groupId)], true);
    return sendScim(reply, 200, resource);
  });

  app.patch('/Groups/:id', hide, async (request, reply) => {
    const change = readGroupPatch(readPatchBody(request.body));
    await groups.change(request.scimToken.customerId, idOf(request.params), change, request.auditContext);
    return reply.code(204).send();
  });

  app.delete('/Groups/:id', hide, async (request, reply) => {
    await groups.remove(request.scimToken.customerId, idOf(request.params), request.auditContext);
    return reply.code(204).send();
  });
}
