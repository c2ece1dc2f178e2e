/**
 * The signed administrative API (/api/...): authenticates every request before its body is read,
 * checks the body's customerKey against the header, normalises nulls, and mounts each area.
 */
import type { FastifyInstance } from 'fastify';
import { normaliseBody } from '../http/app.ts';
import { Invalid, Unauthenticated } from '../lib/errors.ts';
import type { AdminAuthenticator } from './admin-auth.ts';
import type { Customer } from './customers/types.ts';
import { installAdminErrors } from './errors.ts';
import { groupRoutes } from './groups/routes.ts';
import type { GroupsService } from './groups/service.ts';
import { userRoutes } from './users/routes.ts';
import type { UsersService } from './users/service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The customer whose signature authenticated this admin request. */
    customer: Customer;
  }
}

export interface AdminApiOptions {
  authenticator: AdminAuthenticator;
  users: UsersService;
  groups: GroupsService;
  /** Further areas (MFA, magic links, …) mounted in the same signed scope. */
  areas?: ((app: FastifyInstance) => Promise<void>)[];
}

const DIGITS = /^[0-9]+$/;

export async function adminApi(app: FastifyInstance, opts: AdminApiOptions): Promise<void> {
  installAdminErrors(app);
  app.decorateRequest('customer', null as unknown as Customer);

  app.addHook('onRequest', async (request) => {
    request.customer = await opts.authenticator.authenticate(request.headers);
  });

  app.addHook('preValidation', async (request) => {
    const body = request.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
    const badPath = normaliseBody(body);
    if (badPath) throw new Invalid(badPath, 'must not contain control characters');
    // A body naming another customer than the signed header is refused like a wrong signature.
    const key = (body as { customerKey?: unknown }).customerKey;
    const given = typeof key === 'number' && Number.isSafeInteger(key) ? String(key)
      : typeof key === 'string' && DIGITS.test(key) ? key : undefined;
    if (given !== undefined && given !== request.customer.customerKey) throw new Unauthenticated('customer_mismatch', 'admin');
  });

  await app.register(userRoutes, { users: opts.users });
  await app.register(groupRoutes, { groups: opts.groups });
  for (const area of opts.areas ?? []) await app.register(area);
}
