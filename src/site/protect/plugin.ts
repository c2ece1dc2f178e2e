/**
 * The reusable protection plugin: register it in any Fastify app (or scope) and every route added
 * there after it requires one of the enabled credential methods; `request.principal` says who is
 * calling. A route opts out with `config: { siteAuth: false }` (a token endpoint, a JWKS document).
 * It never renders a body: failures are thrown as domain errors for the app's error handler
 * (site/errors.ts here).
 */
import type { FastifyInstance, FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import { createSiteAuthenticator, type SiteAuthenticator, type SiteProtectionOptions } from './authenticator.ts';
import type { Principal } from './principal.ts';

export type { SiteProtectionOptions } from './authenticator.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route takes no credential (request.principal stays null). */
    siteAuth?: boolean;
  }
  interface FastifyInstance {
    /** The plugin's authenticator, for routes that opt out and check credentials themselves (API-token management). */
    siteAuthenticator: SiteAuthenticator;
  }
}

async function protect(app: FastifyInstance, options: SiteProtectionOptions): Promise<void> {
  // Validates the options now, so a misconfiguration fails at startup rather than per request.
  const authenticator = createSiteAuthenticator(options);
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorate('siteAuthenticator', authenticator);
  // onRequest: before the body is read, so an unauthenticated caller cannot make us parse one.
  // Callback style: an async hook costs Fastify a promise chain on every request.
  const authenticate: onRequestHookHandler = (request, _reply, done) => {
    authenticator.authenticate(request).then((principal) => {
      request.principal = principal;
      done();
    }, done);
  };
  // Whether a route takes a credential is known when it is added: the check is put on the routes
  // that do, first among their own hooks (a route's hook may read request.principal).
  app.addHook('onRoute', (route) => {
    if (route.config?.siteAuth === false) return;
    route.onRequest = [authenticate, ...[route.onRequest ?? []].flat()];
  });
}

// Not encapsulated (as fastify-plugin does): the hook and decoration apply to the registering scope.
Object.assign(protect, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'latchkey-site-protection',
});

/** `app.register(siteProtection, options)`. @throws TypeError at registration for bad options. */
export const siteProtection: FastifyPluginAsync<SiteProtectionOptions> = protect;
