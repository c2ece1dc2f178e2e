/**
 * The SCIM 2.0 service provider at /scim/v2 (RFC 7644), a face over the users and groups domain:
 * every request carries a customer's SCIM token (Authorization: Bearer), and that customer is the
 * only tenant it reaches. Its own scope: application/scim+json bodies (application/json too), RFC
 * 7644 error bodies for everything (identity/errors.ts's 'scim' row), the audit actor {scim, tokenId}.
 * The admin API's signature, customerKey and body checks are the /api scope's and do not apply here.
 */
import type { FastifyInstance } from 'fastify';
import { requestContext } from '../audit/context.ts';
import { sendWire } from '../http/app.ts';
import { parseStrictJson } from '../http/input-checks.ts';
import { installPartErrors } from '../identity/errors.ts';
import type { GroupProvisioningService } from '../identity/groups/provisioning.ts';
import type { UserProvisioningService } from '../identity/users/provisioning.ts';
import { scimDiscoveryRoutes } from './discovery.ts';
import { scimRouteNotFound, ScimError, UNAUTHENTICATED_DETAIL } from './errors.ts';
import { scimGroupRoutes } from './groups/routes.ts';
import type { ScimToken } from './tokens/types.ts';
import type { ScimTokensService } from './tokens/service.ts';
import { scimUserRoutes } from './users/routes.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The SCIM token that authenticated this /scim/v2 request: its customer is the request's tenant. */
    scimToken: ScimToken;
  }
}

export const SCIM_PREFIX = '/scim/v2';

export interface ScimPluginOptions {
  scimTokens: ScimTokensService;
  users: UserProvisioningService;
  groups: GroupProvisioningService;
  /** LATCHKEY_PUBLIC_URL: the base URL is `${publicUrl}/scim/v2`. */
  publicUrl: string;
}

// RFC 6750 §2.1: the scheme is case-insensitive; a token is one run of token68 characters.
const BEARER = /^\s*bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i;

export function scimPlugin(opts: ScimPluginOptions): (app: FastifyInstance) => Promise<void> {
  const baseUrl = `${opts.publicUrl.replace(/\/+$/, '')}${SCIM_PREFIX}`;
  return async (app) => {
    await app.register(async (scim) => {
      installPartErrors(scim, 'scim');
      scim.setNotFoundHandler((_request, reply) => sendWire(reply, scimRouteNotFound()));
      scim.decorateRequest('scimToken', null as unknown as ScimToken);

      // RFC 7644 §3.1: application/scim+json; application/json (the root's strict parser) as well.
      scim.removeContentTypeParser('text/plain');
      scim.addContentTypeParser('application/scim+json', { parseAs: 'buffer' }, parseStrictJson);

      scim.addHook('onRequest', (request, _reply, done) => {
        const match = BEARER.exec(String(request.headers.authorization ?? ''));
        if (!match) return done(new ScimError(401, undefined, UNAUTHENTICATED_DETAIL));
        opts.scimTokens.authenticate(match[1]).then((token) => {
          if (!token) return done(new ScimError(401, undefined, UNAUTHENTICATED_DETAIL));
          request.scimToken = token;
          done();
        }, done);
      });

      scim.addHook('preHandler', (request, _reply, done) => {
        request.auditContext = requestContext(request, { type: 'scim', id: request.scimToken.tokenId });
        done();
      });

      await scim.register(scimDiscoveryRoutes, { baseUrl });
      await scim.register(scimUserRoutes, { baseUrl, users: opts.users });
      await scim.register(scimGroupRoutes, { baseUrl, groups: opts.groups });
    }, { prefix: SCIM_PREFIX });
  };
}
