/**
 * The signed administrative API (/api/...): authenticates every request before its body is read,
 * checks the body's customerKey against the header, normalises nulls, and mounts each area.
 */
import type { FastifyInstance } from 'fastify';
import { requestContext } from '../audit/context.ts';
import { checkBody } from '../http/app.ts';
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
  interface FastifyContextConfig {
    /** Top-level body fields whose text may span lines (line breaks and tabs; no other control character). */
    multilineFields?: readonly string[];
  }
}

export interface AdminApiOptions {
  authenticator: AdminAuthenticator;
  users: UsersService;
  groups: GroupsService;
  /** Further areas (MFA, magic links, …) mounted in the same signed scope. */
  areas?: ((app: FastifyInstance) => Promise<void>)[];
  /**
   * `Authorization: Bearer <access_token>` (POST /oauth/token), accepted instead of the signature
   * only on routes whose config names a `bearerScope` (the magic-link routes).
   */
  bearer?: { authenticate(authorization: string, scope: string): Promise<{ customer: Customer; clientId: string }> };
}

const BEARER = /^\s*bearer\s/i;

const DIGITS = /^[0-9]+$/;

/**
 * False when the body's customerKey names another customer than the signed header. Values of the
 * wrong type are left to the schema (400). An integer beyond 2^53 is refused here: JSON Schema
 * calls 1e20 an integer, and no customer key can equal it.
 */
function sameCustomer(bodyKey: unknown, headerKey: string): boolean {
  if (typeof bodyKey === 'number' && Number.isInteger(bodyKey)) return Number.isSafeInteger(bodyKey) && String(bodyKey) === headerKey;
  if (typeof bodyKey === 'string' && DIGITS.test(bodyKey)) return bodyKey === headerKey;
  return true;
}

/** A field path chosen by the caller (an object key) is echoed in the message; keep it short. */
const clip = (path: string) => (path.length > 64 ? `${path.slice(0, 64)}…` : path);

export async function adminApi(app: FastifyInstance, opts: AdminApiOptions): Promise<void> {
  installAdminErrors(app);
  app.decorateRequest('customer', null as unknown as Customer);

  // Callback style, as every per-request hook here: an async hook costs Fastify a promise chain.
  app.addHook('onRequest', (request, _reply, done) => {
    const scope = request.routeOptions.config?.bearerScope;
    const authorization = request.headers.authorization;
    const viaBearer = scope !== undefined && opts.bearer !== undefined && typeof authorization === 'string' && BEARER.test(authorization);
    const authenticated = viaBearer
      ? opts.bearer!.authenticate(authorization, scope).then(({ customer, clientId }) => ({ customer, actor: { type: 'oauth-client', id: clientId } as const }))
      : opts.authenticator.authenticate(request.headers).then((customer) => ({ customer, actor: { type: 'api', id: customer.customerKey } as const }));
    authenticated.then(({ customer, actor }) => {
      request.customer = customer;
      // The audit log's actor: the signature's customer key, or the OAuth client of a bearer token.
      request.auditContext = requestContext(request, actor);
      done();
    }, done);
  });

  // Only JSON is an admin request body: without this, Fastify's built-in text/plain parser would
  // hand a string to the schema and answer 400 "body must be object" instead of 415.
  app.removeContentTypeParser('text/plain');

  app.addHook('preValidation', (request, _reply, done) => {
    const body = request.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return done();
    const bad = checkBody(body, request.routeOptions.config?.multilineFields);
    if (bad) return done(new Invalid(clip(bad.path), bad.rule));
    // A body naming another customer than the signed header is refused like a wrong signature.
    if (!sameCustomer((body as { customerKey?: unknown }).customerKey, request.customer.customerKey)) {
      return done(new Unauthenticated('customer_mismatch', 'admin'));
    }
    done();
  });

  await app.register(userRoutes, { users: opts.users });
  await app.register(groupRoutes, { groups: opts.groups });
  for (const area of opts.areas ?? []) await app.register(area);
}
