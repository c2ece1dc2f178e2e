/** HTTP for /admin/users/...: schemas, wire shapes, the spec's error variants. No rules, no SQL. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { batchProperties, customerKeySchema, nameString } from '../../http/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { GROUP_NAME } from '../groups/rules.ts';
import type { UsersService } from './service.ts';
import { USER_NOT_FOUND_MESSAGE } from '../../lib/errors.ts';
import type { GroupAssignment, UserInput } from './types.ts';
import {
  EMAIL, MAX_ATTRIBUTES_PER_MEMBERSHIP, MAX_GROUPS_PER_USER, MEMBERSHIP_ATTRIBUTE_NAME, MEMBERSHIP_ATTRIBUTE_VALUE,
  PASSWORD_TEXT, PERSON_NAME, PHONE, USERNAME,
} from './rules.ts';
import {
  customAttributeRequestProperties, getUserResponseSchema, listUsersResponseSchema,
  readCustomAttributes, toGetEnvelope, toListEnvelope, type WireOptions,
} from './wire.ts';

const MAX_USERS_BATCH = 500;

const groupObject = {
  type: 'object',
  required: ['name'],
  properties: {
    name: textSchema(GROUP_NAME),
    attributes: {
      type: 'array',
      maxItems: MAX_ATTRIBUTES_PER_MEMBERSHIP,
      items: {
        type: 'object',
        required: ['name', 'value'],
        properties: { name: textSchema(MEMBERSHIP_ATTRIBUTE_NAME), value: textSchema(MEMBERSHIP_ATTRIBUTE_VALUE) },
      },
    },
  },
} as const;

export const userWriteProperties = {
  customerKey: customerKeySchema,
  username: textSchema(USERNAME),
  email: textSchema(EMAIL),
  firstName: textSchema(PERSON_NAME),
  lastName: textSchema(PERSON_NAME),
  phone: textSchema(PHONE),
  password: textSchema(PASSWORD_TEXT),
  alternateEmail: { anyOf: [textSchema(EMAIL), { type: 'string', maxLength: 0 }] },
  groups: { type: 'array', maxItems: MAX_GROUPS_PER_USER, items: groupObject },
  ...customAttributeRequestProperties,
} as const;

const writeResponse = {
  type: 'object',
  properties: {
    userId: { type: 'integer' }, username: { type: 'string' }, email: { type: 'string' },
    status: { type: 'string' }, message: { type: 'string' },
  },
} as const;

const customerResponse = {
  type: 'object',
  properties: { customerId: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' } },
} as const;

const byUsername = {
  type: 'object',
  required: ['customerKey', 'username'],
  properties: { customerKey: customerKeySchema, username: nameString(255) },
} as const;

const includeExpiryQuery = {
  type: 'object',
  properties: { includePwdExpDttm: { type: 'string', enum: ['true', 'false'] } },
} as const;

/** The spec's get table spells the field `Username`, its sample `username`: both are read. */
function acceptCapitalisedUsername(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const body = request.body as Record<string, unknown> | null;
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && body.username === undefined && body.Username !== undefined) {
    body.username = body.Username;
  }
  done();
}

type WriteBody = Record<string, unknown> & {
  username: string; email?: string; firstName?: string; lastName?: string; phone?: string;
  password?: string; alternateEmail?: string;
  groups?: { name: string; attributes?: { name: string; value: string }[] }[];
};

function toUserInput(body: WriteBody): UserInput {
  return {
    username: body.username,
    email: body.email,
    firstName: body.firstName,
    lastName: body.lastName,
    phone: body.phone,
    password: body.password,
    alternateEmail: body.alternateEmail,
    groups: body.groups?.map((g): GroupAssignment => ({ name: g.name, attributes: g.attributes ?? [] })),
    customAttributes: readCustomAttributes(body),
  };
}

function wireOptions(request: FastifyRequest, includeRole: boolean): WireOptions {
  const query = request.query as { includePwdExpDttm?: string };
  return {
    includeRole,
    includePasswordExpiry: query.includePwdExpDttm === 'true',
    passwordExpiryDays: request.customer.passwordExpiryDays,
  };
}

/**
 * getall and get answer with their fields in the order wire.ts builds them, as they always have (the
 * response schema's serialiser would reorder them); their includePwdExpDttm variants have always gone
 * through the schema, and still do. That text is rendered once per object the read cache keeps (it
 * hands out the same object until the rows change), not once per request: a 500-user page is 360 KB.
 * It is kept encoded, as the socket takes it: a string would be encoded to UTF-8 again on every write,
 * which cost a 500-user page more than the rest of its request. Weakly held, so it goes when the cache
 * drops the object.
 */
const renderedBodies = new WeakMap<object, Buffer>();

function renderedOnce(reply: FastifyReply, kept: object, render: () => Record<string, unknown>): Buffer {
  let body = renderedBodies.get(kept);
  if (body === undefined) {
    body = Buffer.from(JSON.stringify(render()));
    renderedBodies.set(kept, body);
  }
  reply.type('application/json; charset=utf-8');
  return body;
}

export async function userRoutes(app: FastifyInstance, opts: { users: UsersService }): Promise<void> {
  const { users } = opts;
  const tags = ['Users'];

  app.post('/admin/users/create', {
    schema: {
      tags, summary: 'Create a user',
      body: { type: 'object', required: ['customerKey', 'username', 'firstName', 'lastName'], properties: userWriteProperties },
      response: { 200: writeResponse },
    },
  }, async (request) => {
    const user = await users.create(request.customer.id, toUserInput(request.body as WriteBody), request.auditContext);
    return { userId: user.id, username: user.username, email: user.email, status: 'SUCCESS', message: 'User created successfully.' };
  });

  app.post('/admin/users/update', {
    schema: {
      tags, summary: 'Update a user; omitted or null fields keep their values',
      body: { type: 'object', required: ['customerKey', 'username'], properties: userWriteProperties },
      response: { 200: writeResponse },
    },
  }, async (request) => {
    const user = await users.update(request.customer.id, toUserInput(request.body as WriteBody), request.auditContext);
    return { userId: user.id, username: user.username, email: user.email, status: 'SUCCESS', message: 'User updated successfully.' };
  });

  app.post('/admin/users/getall', {
    schema: {
      tags, summary: 'List users in batches',
      querystring: includeExpiryQuery,
      body: { type: 'object', required: ['customerKey', 'batchSize', 'batchNo'], properties: { customerKey: customerKeySchema, ...batchProperties(MAX_USERS_BATCH) } },
      response: { 200: listUsersResponseSchema },
    },
  }, async (request, reply) => {
    const { batchNo, batchSize } = request.body as { batchNo: number; batchSize: number };
    const options = wireOptions(request, false);
    const page = await users.list(request.customer.id, batchNo, batchSize);
    if (!options.includePasswordExpiry) return renderedOnce(reply, page, () => toListEnvelope(page.users, page.nextBatch, options));
    return toListEnvelope(page.users, page.nextBatch, options);
  });

  app.post('/admin/users/get', {
    config: { adminErrors: 'get-user' },
    preValidation: acceptCapitalisedUsername,
    schema: { tags, summary: 'Fetch one user by username or e-mail', querystring: includeExpiryQuery, body: byUsername, response: { 200: getUserResponseSchema } },
  }, async (request, reply) => {
    const login = (request.body as { username: string }).username;
    const options = wireOptions(request, true);
    const user = await users.getWithGroups(request.customer.id, login);
    if (!options.includePasswordExpiry) return renderedOnce(reply, user, () => toGetEnvelope(user, options));
    return toGetEnvelope(user, options);
  });

  app.post('/admin/users/search', {
    preValidation: acceptCapitalisedUsername,
    schema: {
      tags, summary: 'Extension: look a user up without an error status (USER_FOUND / USER_NOT_FOUND)',
      body: byUsername, response: { 200: getUserResponseSchema },
    },
  }, async (request) => {
    const login = (request.body as { username: string }).username;
    const found = await users.findByLogin(request.customer.id, login);
    if (!found) return { status: 'USER_NOT_FOUND', message: USER_NOT_FOUND_MESSAGE };
    const user = await users.getWithGroups(request.customer.id, found.username);
    return toGetEnvelope(user, wireOptions(request, true), 'USER_FOUND', 'User found.');
  });

  app.post('/admin/users/delete', {
    config: { adminErrors: 'delete-user' },
    schema: { tags, summary: 'Delete a user', body: byUsername, response: { 200: customerResponse } },
  }, async (request) => {
    await users.remove(request.customer.id, (request.body as { username: string }).username, request.auditContext);
    return { customerId: request.customer.id, status: 'SUCCESS', message: 'User deleted successfully.' };
  });

  for (const [action, isDisabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/admin/users/${action}`, {
      config: { adminErrors: 'disable-enable' },
      schema: { tags, summary: `${action === 'disable' ? 'Disable' : 'Enable'} a user (username or e-mail)`, body: byUsername, response: { 200: customerResponse } },
    }, async (request) => {
      await users.setDisabled(request.customer.id, (request.body as { username: string }).username, isDisabled, request.auditContext);
      return { customerId: request.customer.id, status: 'SUCCESS', message: `User ${action}d successfully.` };
    });
  }

  app.get('/admin/users/stats/count', {
    schema: {
      tags, summary: 'Count end users',
      response: {
        200: {
          type: 'object',
          properties: {
            status: { type: 'string' }, statusCode: { type: 'integer' }, message: { type: 'string' },
            data: { type: 'object', properties: { count: { type: 'integer' } } },
          },
        },
      },
    },
  }, async (request) => ({
    status: 'SUCCESS',
    statusCode: 200,
    message: 'Successfully fetched user count.',
    data: { count: await users.count(request.customer.id) },
  }));

  app.post('/admin/users/change-password', {
    config: { adminErrors: 'change-password' },
    schema: {
      tags, summary: "Change a user's password",
      body: {
        type: 'object',
        required: ['customerKey', 'username', 'password', 'oldPassword'],
        properties: {
          customerKey: customerKeySchema,
          username: nameString(255),
          password: { type: 'string', minLength: 1, maxLength: 1024 },
          oldPassword: { type: 'string', minLength: 1, maxLength: 1024 },
        },
      },
      response: { 200: customerResponse },
    },
  }, async (request) => {
    const body = request.body as { username: string; password: string; oldPassword: string };
    await users.changePassword(request.customer.id, body.username, body.oldPassword, body.password, request.auditContext);
    return { customerId: request.customer.id, status: 'SUCCESS', message: 'Password changed successfully.' };
  });
}
