/**
 * GET /rest/api/2/myself: the calling user as Jira's user resource, so unmodified Jira REST
 * clients (jira-client's getCurrentUser, jira.js's myself.getCurrentUser) can read it.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { UsersService } from '../../identity/users/service.ts';
import type { UserWithGroups } from '../../identity/users/types.ts';
import { Forbidden, Unauthenticated } from '../../lib/errors.ts';

export interface MyselfRoutesOptions {
  /** The user with their group names; undefined when the user no longer exists. */
  users: Pick<UsersService, 'findByIdWithGroups'>;
  siteCustomerId(): Promise<number | undefined>;
  /** Base of the `self` URLs, from configuration (never from request headers). */
  siteUrl: string;
}

const AVATAR_SIZES = ['48x48', '24x24', '16x16', '32x32'] as const;

/** Jira's user resource (REST API 2) for `user`. */
export function toJiraUser(user: UserWithGroups, siteUrl: string) {
  const { groups } = user;
  // Gravatar, as Jira does, with the "mystery person" default: no avatar is stored here.
  const emailHash = createHash('md5').update(user.email.trim().toLowerCase()).digest('hex');
  const avatarUrls = Object.fromEntries(AVATAR_SIZES.map((size) => [size, `https://www.gravatar.com/avatar/${emailHash}?d=mm&s=${size.split('x')[0]}`]));
  const displayName = `${user.firstName} ${user.lastName}`.trim() || user.username;
  return {
    self: `${siteUrl}/rest/api/2/user?accountId=${encodeURIComponent(user.guid)}`,
    key: user.username.toLowerCase(),
    accountId: user.guid,
    accountType: 'atlassian',
    name: user.username,
    emailAddress: user.email,
    avatarUrls,
    displayName,
    active: !user.isDisabled,
    deleted: false,
    timeZone: 'UTC',
    locale: user.preferredLocale ? user.preferredLocale.replace('-', '_') : 'en_US',
    groups: {
      size: groups.length,
      items: groups.map((name) => ({ name, self: `${siteUrl}/rest/api/2/group?groupname=${encodeURIComponent(name)}` })),
    },
    applicationRoles: { size: 0, items: [] as never[] },
    expand: 'groups,applicationRoles',
  };
}

const linkSchema = { type: 'string', format: 'uri' } as const;

export const jiraUserSchema = {
  type: 'object',
  description: "Jira's user resource for the caller.",
  required: ['self', 'key', 'accountId', 'accountType', 'name', 'emailAddress', 'avatarUrls', 'displayName',
    'active', 'deleted', 'timeZone', 'locale', 'groups', 'applicationRoles', 'expand'],
  properties: {
    self: linkSchema,
    key: { type: 'string' },
    accountId: { type: 'string' },
    accountType: { type: 'string', enum: ['atlassian'] },
    name: { type: 'string' },
    emailAddress: { type: 'string' },
    avatarUrls: {
      type: 'object',
      properties: Object.fromEntries(AVATAR_SIZES.map((size) => [size, linkSchema])),
    },
    displayName: { type: 'string' },
    active: { type: 'boolean' },
    deleted: { type: 'boolean' },
    timeZone: { type: 'string' },
    locale: { type: 'string' },
    groups: {
      type: 'object',
      properties: {
        size: { type: 'integer' },
        items: {
          type: 'array',
          items: { type: 'object', properties: { name: { type: 'string' }, self: linkSchema } },
        },
      },
    },
    applicationRoles: {
      type: 'object',
      properties: { size: { type: 'integer' }, items: { type: 'array', items: { type: 'object' } } },
    },
    expand: { type: 'string' },
  },
} as const;

/** Registers GET /rest/api/2/myself; request.principal must be set by the protection in front. */
export async function myselfRoutes(app: FastifyInstance, opts: MyselfRoutesOptions): Promise<void> {
  const rendered = new WeakMap<UserWithGroups, string>();
  app.get('/rest/api/2/myself', {
    schema: {
      tags: ['API tokens'],
      summary: 'The calling user (Jira user resource)',
      description: 'Authenticate with `Authorization: Basic base64(username:token)` or `Authorization: Bearer <token>`. '
        + '`expand` is accepted and ignored: groups and application roles are always included.',
      querystring: { type: 'object', properties: { expand: { type: 'string', maxLength: 256 } } },
      response: { 200: jiraUserSchema },
    },
  }, async (request, reply) => {
    const { principal } = request;
    if (principal.userId === null) throw new Forbidden('no_user', 'this credential does not belong to a user');
    const customerId = await opts.siteCustomerId();
    const found = customerId === undefined ? undefined : await opts.users.findByIdWithGroups(customerId, principal.userId);
    // Deleted between authentication and this read: the credential is no longer valid.
    if (!found) throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
    // The users service hands out the same object while the user is unchanged: render it once.
    let body = rendered.get(found);
    if (body === undefined) {
      body = reply.serialize(toJiraUser(found, opts.siteUrl)) as string;
      rendered.set(found, body);
    }
    reply.type('application/json; charset=utf-8');
    return body;
  });
}
