/**
 * HTTP for /admin/users/passkeys/getall and /admin/users/passkeys/delete (signed; also under /moas/api):
 * a user's passkeys by name and dates, and removing one. Wire shapes only; the rules are in service.ts.
 * Nothing of a credential (its ID or public key) goes on the wire.
 */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema, nameString } from '../../http/schemas.ts';
import type { UsersService } from '../users/service.ts';
import type { PasskeysService } from './service.ts';
import type { PasskeySummary } from './types.ts';

export const PASSKEY_REMOVED_MESSAGE = 'The passkey has been removed.';

export interface PasskeyRoutesOptions {
  passkeys: Pick<PasskeysService, 'list' | 'remove'>;
  users: Pick<UsersService, 'getWithGroups'>;
}

/** `YYYY-MM-DDTHH:MMZ`, as the user records' dates. */
const minuteUtc = (ms: number) => `${new Date(ms).toISOString().slice(0, 16)}Z`;

export function toWirePasskey(passkey: PasskeySummary) {
  return {
    passkeyId: passkey.passkeyId,
    name: passkey.name,
    creationDttm: minuteUtc(passkey.createdAt),
    lastUsedDttm: passkey.lastUsedAt === null ? '' : minuteUtc(passkey.lastUsedAt),
  };
}

const wirePasskey = {
  type: 'object',
  properties: {
    passkeyId: { type: 'string' },
    name: { type: 'string' },
    creationDttm: { type: 'string', description: 'YYYY-MM-DDTHH:MMZ' },
    lastUsedDttm: { type: 'string', description: 'YYYY-MM-DDTHH:MMZ, or "" until the passkey is first used' },
  },
} as const;

export async function passkeyRoutes(app: FastifyInstance, opts: PasskeyRoutesOptions): Promise<void> {
  const { passkeys, users } = opts;

  app.post('/admin/users/passkeys/getall', {
    schema: {
      tags: ['Users'],
      summary: "Extension: a user's passkeys (username or e-mail): name, created and last used; no credential data",
      body: {
        type: 'object',
        required: ['customerKey', 'username'],
        properties: { customerKey: customerKeySchema, username: nameString(255) },
      },
      response: {
        200: { type: 'object', properties: { status: { type: 'string' }, passkeys: { type: 'array', items: wirePasskey } } },
      },
    },
  }, async (request) => {
    const user = await users.getWithGroups(request.customer.id, (request.body as { username: string }).username);
    const list = await passkeys.list({ customerId: request.customer.id, userId: user.id });
    return { status: 'SUCCESS', passkeys: list.map(toWirePasskey) };
  });

  app.post('/admin/users/passkeys/delete', {
    schema: {
      tags: ['Users'],
      summary: "Extension: remove one of a user's passkeys (passkeyId from users/passkeys/getall); it no longer signs in",
      body: {
        type: 'object',
        required: ['customerKey', 'username', 'passkeyId'],
        properties: { customerKey: customerKeySchema, username: nameString(255), passkeyId: { type: 'string', minLength: 1, maxLength: 20, pattern: '^[0-9]+$' } },
      },
      response: {
        200: { type: 'object', properties: { status: { type: 'string' }, message: { type: 'string' } } },
      },
    },
  }, async (request) => {
    const body = request.body as { username: string; passkeyId: string };
    const user = await users.getWithGroups(request.customer.id, body.username);
    await passkeys.remove({ customerId: request.customer.id, userId: user.id }, body.passkeyId, request.auditContext);
    request.log.info({ userId: user.id, passkeyId: body.passkeyId }, 'passkey removed');
    return { status: 'SUCCESS', message: PASSKEY_REMOVED_MESSAGE };
  });
}

/** The routes as an `areas` entry of the admin API. */
export const passkeysArea = (opts: PasskeyRoutesOptions) => (app: FastifyInstance) => passkeyRoutes(app, opts);
