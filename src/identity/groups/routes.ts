/** HTTP for /admin/groups/...: schemas and the spec's group and mapping records. */
import type { FastifyInstance } from 'fastify';
import { batchProperties, customerKeySchema, emailString } from '../../http/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { GROUP_ATTRIBUTE_NAMES as attributeNames, GROUP_ATTRIBUTE_VALUE, GROUP_NAME, isGroupAttributeName } from './rules.ts';
import type { GroupsService } from './service.ts';
import type { Group, GroupInput } from './types.ts';

const MAX_GROUPS_BATCH = 1000;

const groupRecordSchema = {
  type: 'object',
  properties: {
    groupName: { type: 'string' },
    customerId: { type: 'integer' },
    isDefault: { type: 'boolean' },
    isCustomerDefault: { type: 'boolean' },
    isUserInviteEnabled: { type: 'boolean' },
    numOfUsersInGroup: { type: 'integer' },
    creationDttm: { type: 'integer' },
    lastUpdatedDttm: { type: 'integer' },
    ...Object.fromEntries(attributeNames.map((n) => [n, { type: 'string' }])),
  },
} as const;

const customerResponse = {
  type: 'object',
  properties: { customerId: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' } },
} as const;

const pageBody = {
  type: 'object',
  required: ['customerKey', 'batchSize', 'batchNo'],
  properties: { customerKey: customerKeySchema, ...batchProperties(MAX_GROUPS_BATCH) },
} as const;

/** Attributes first and the record's own fields after: whatever a row holds, no attribute can shadow a field. */
function toWireGroup(group: Group) {
  return {
    ...Object.fromEntries(Object.entries(group.attributes).filter(([name, value]) => isGroupAttributeName(name) && value !== '')),
    groupName: group.name,
    customerId: group.customerId,
    isDefault: group.isDefault,
    isCustomerDefault: group.isCustomerDefault,
    isUserInviteEnabled: false,
    numOfUsersInGroup: group.memberCount,
    // The spec shows the default group without dates.
    ...(group.isCustomerDefault ? {} : { creationDttm: group.createdAt, lastUpdatedDttm: group.updatedAt }),
  };
}

export async function groupRoutes(app: FastifyInstance, opts: { groups: GroupsService }): Promise<void> {
  const { groups } = opts;
  const tags = ['Groups'];

  app.post('/admin/groups/getall', {
    schema: {
      tags, summary: 'List groups in batches', body: pageBody,
      response: {
        200: {
          type: 'object',
          properties: {
            customerId: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' },
            groups: { type: 'array', items: groupRecordSchema }, fetchedCount: { type: 'integer' }, nextBatch: { type: 'integer' },
          },
        },
      },
    },
  }, async (request) => {
    const { batchNo, batchSize } = request.body as { batchNo: number; batchSize: number };
    const page = await groups.list(request.customer.id, batchNo, batchSize);
    return {
      customerId: request.customer.id,
      status: 'SUCCESS',
      message: 'Successfully fetched groups.',
      groups: page.items.map(toWireGroup),
      fetchedCount: page.items.length,
      nextBatch: page.nextBatch,
    };
  });

  app.post('/admin/groups/update', {
    schema: {
      tags, summary: 'Create or update groups (upsert by name); isDefault "true" moves the default group',
      body: {
        type: 'object',
        required: ['customerKey', 'groups'],
        properties: {
          customerKey: customerKeySchema,
          groups: {
            type: 'array', minItems: 1, maxItems: 100,
            items: {
              type: 'object',
              required: ['groupName', 'isDefault'],
              properties: {
                groupName: textSchema(GROUP_NAME),
                isDefault: { anyOf: [{ type: 'string', enum: ['true', 'false'] }, { type: 'boolean' }] },
                customerId: { anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 20 }] },
                ...Object.fromEntries(attributeNames.map((n) => [n, textSchema(GROUP_ATTRIBUTE_VALUE)])),
              },
            },
          },
        },
      },
      response: { 200: customerResponse },
    },
  }, async (request) => {
    const body = request.body as { groups: (Record<string, unknown> & { groupName: string; isDefault: string | boolean })[] };
    const inputs: GroupInput[] = body.groups.map((g) => ({
      name: g.groupName,
      isDefault: g.isDefault === true || g.isDefault === 'true',
      attributes: Object.fromEntries(attributeNames.filter((n) => typeof g[n] === 'string').map((n) => [n, g[n] as string])),
    }));
    await groups.upsert(request.customer.id, inputs, request.auditContext);
    return { customerId: request.customer.id, status: 'SUCCESS', message: 'Groups updated successfully.' };
  });

  app.post('/admin/groups/members/update', {
    schema: {
      tags, summary: 'Add members to a group, or remove them with action "remove"',
      body: {
        type: 'object',
        required: ['customerKey', 'groupName', 'users'],
        properties: {
          customerKey: customerKeySchema,
          groupName: textSchema(GROUP_NAME),
          users: {
            type: 'array', minItems: 1, maxItems: 1000,
            items: {
              type: 'object',
              required: ['primaryEmail'],
              properties: { primaryEmail: emailString, action: { type: 'string', enum: ['remove', 'add'] } },
            },
          },
        },
      },
      response: { 200: customerResponse },
    },
  }, async (request) => {
    const body = request.body as { groupName: string; users: { primaryEmail: string; action?: string }[] };
    await groups.updateMembers(request.customer.id, body.groupName,
      body.users.map((u) => ({ primaryEmail: u.primaryEmail, remove: u.action === 'remove' })), request.auditContext);
    return { customerId: request.customer.id, status: 'SUCCESS', message: 'Group members updated successfully.' };
  });

  app.post('/admin/groups/members', {
    schema: {
      tags, summary: 'List user-group mappings in batches', body: pageBody,
      response: {
        200: {
          type: 'object',
          properties: {
            customerId: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' },
            groupDetails: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  primaryEmail: { type: 'string' }, creationDttm: { type: 'integer' },
                  lastUpdatedDttm: { type: 'integer' }, groupName: { type: 'string' },
                },
              },
            },
            fetchedCount: { type: 'integer' }, nextBatch: { type: 'integer' },
          },
        },
      },
    },
  }, async (request) => {
    const { batchNo, batchSize } = request.body as { batchNo: number; batchSize: number };
    const page = await groups.listMemberships(request.customer.id, batchNo, batchSize);
    return {
      customerId: request.customer.id,
      status: 'SUCCESS',
      message: 'Successfully fetched group members.',
      groupDetails: page.items.map((m) => ({ primaryEmail: m.primaryEmail, creationDttm: m.createdAt, lastUpdatedDttm: m.updatedAt, groupName: m.groupName })),
      fetchedCount: page.items.length,
      nextBatch: page.nextBatch,
    };
  });
}
