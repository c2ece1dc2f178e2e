/**
 * Mounts API tokens on the content site, as a site area inside the protected scope: GET
 * /rest/api/2/myself and the management routes. The verifier the protection plugin calls for Basic
 * and `Bearer lkat_…` credentials, and the password check, are built by compose/site.ts.
 */
import type { UsersService } from '../../identity/users/service.ts';
import type { SiteArea } from '../app.ts';
import { myselfRoutes } from './myself.ts';
import type { PasswordAuthenticator } from './password-auth.ts';
import { apiTokenRoutes } from './routes.ts';
import type { ApiTokensService } from './service.ts';

export interface ApiTokenAreaParts {
  tokens: ApiTokensService;
  users: Pick<UsersService, 'findByIdWithGroups'>;
  siteUrl: string;
  /** Checks username:password on the management routes (throttled like the token endpoint). */
  password: PasswordAuthenticator;
}

/** The routes, for the site app's `areas` (mounted inside the protected scope). */
export function apiTokenArea(parts: ApiTokenAreaParts): SiteArea {
  return async (app, site) => {
    // The management routes check credentials themselves (passwords too) with the plugin's authenticator.
    if (!app.hasDecorator('siteAuthenticator')) throw new Error('API tokens: mount the area inside the site protection plugin');
    await app.register(myselfRoutes, {
      users: parts.users,
      siteCustomerId: site.siteCustomerId,
      siteUrl: parts.siteUrl,
    });
    await app.register(apiTokenRoutes, {
      tokens: parts.tokens,
      clock: site.clock,
      siteCustomerId: site.siteCustomerId,
      authenticate: (request) => app.siteAuthenticator.authenticate(request),
      password: parts.password,
    });
  };
}
