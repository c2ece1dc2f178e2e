/**
 * Plugs API tokens into the content site: the verifier the protection plugin calls for Basic and
 * `Bearer lkat_…` credentials, GET /rest/api/2/myself, and the management routes.
 */
import type { Kysely } from 'kysely';
import type { MfaService } from '../../identity/mfa/service.ts';
import type { UsersService } from '../../identity/users/service.ts';
import type { Database } from '../../store/schema.ts';
import type { ThrottleStore } from '../../store/throttles/types.ts';
import type { SiteArea, SiteContext } from '../app.ts';
import { createApiTokenVerifier } from '../protect/api-token.ts';
import { createLoginThrottle } from '../token/throttle.ts';
import type { ApiTokenVerifier, SiteUser } from '../protect/principal.ts';
import { myselfRoutes } from './myself.ts';
import { createPasswordAuthenticator } from './password-auth.ts';
import { apiTokenRoutes } from './routes.ts';
import type { ApiTokensService } from './service.ts';

export interface ApiTokenAreaDeps {
  db: Kysely<Database>;
  tokens: ApiTokensService;
  users: Pick<UsersService, 'findByIdWithGroups' | 'findByLogin' | 'verifyCredentials'>;
  /** Users with an authenticator app may not manage tokens with their password alone. */
  mfa?: Pick<MfaService, 'hasActiveAuthenticator'>;
  siteUrl: string;
  /** Where the token endpoint's throttle counts (the same store as the site app's); default: the database. */
  throttles?: ThrottleStore;
}

const capabilitiesOf = (site: SiteContext) => (user: SiteUser) => site.capabilities(site.customer.id, user.id);

/** The verifier for the site app's `apiTokens` option. */
export function apiTokenVerifierFor(tokens: ApiTokensService): (site: SiteContext) => ApiTokenVerifier {
  return (site) => createApiTokenVerifier({ tokens, siteCustomerId: site.siteCustomerId, capabilitiesOf: capabilitiesOf(site) });
}

/** The routes, for the site app's `areas` option (mounted inside the protected scope). */
export function apiTokenArea(deps: ApiTokenAreaDeps): SiteArea {
  return async (app, site) => {
    // The management routes check credentials themselves (passwords too) with the plugin's authenticator.
    if (!app.hasDecorator('siteAuthenticator')) throw new Error('API tokens: mount the area inside the site protection plugin');
    await app.register(myselfRoutes, {
      users: deps.users,
      siteCustomerId: site.siteCustomerId,
      siteUrl: deps.siteUrl,
    });
    await app.register(apiTokenRoutes, {
      tokens: deps.tokens,
      clock: site.clock,
      siteCustomerId: site.siteCustomerId,
      authenticate: (request) => app.siteAuthenticator.authenticate(request),
      password: createPasswordAuthenticator({
        users: deps.users,
        capabilitiesOf: capabilitiesOf(site),
        // Its own instance over the token endpoint's tables: both count the same failures.
        throttle: createLoginThrottle({ store: deps.throttles, db: deps.db, clock: site.clock, ...site.config.login }),
        hasSecondFactor: deps.mfa ? (customerId, userId) => deps.mfa!.hasActiveAuthenticator(customerId, userId) : undefined,
      }),
    });
  };
}
