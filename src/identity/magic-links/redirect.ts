/**
 * Where a magic link sends the user, by application type (spec, Magic links): SAML ignores
 * redirectUri; JWT requires one equal to a return URL; OAUTH takes one of its login URLs or
 * redirect URIs, by default the first login URL.
 */
import { Invalid } from '../../lib/errors.ts';
import type { Application } from '../applications/types.ts';

/** @throws Invalid naming redirectUri. @returns the target to store (null for SAML). */
export function chooseRedirect(application: Application, redirectUri: string | undefined): string | null {
  switch (application.type) {
    case 'SAML':
      return null;
    case 'JWT':
      if (redirectUri === undefined) throw new Invalid('redirectUri', 'is required for JWT applications');
      if (!application.returnUrls.includes(redirectUri)) throw new Invalid('redirectUri', 'must equal one of the application\'s returnUrls');
      return redirectUri;
    case 'OAUTH':
      if (redirectUri === undefined) {
        if (application.loginUrls.length === 0) throw new Invalid('redirectUri', 'is required: the application has no loginUrls');
        return application.loginUrls[0];
      }
      if (!application.loginUrls.includes(redirectUri) && !application.redirectUris.includes(redirectUri)) {
        throw new Invalid('redirectUri', 'must equal one of the application\'s loginUrls or redirectUris');
      }
      return redirectUri;
  }
}

/**
 * Origins the browser may be sent to after the landing's form POST: browsers apply CSP form-action
 * to that redirect. An OIDC application's login URL redirects on to the provider and back to one of
 * its redirect URIs, so those origins are allowed too.
 */
export function redirectOrigins(application: Application, target: string | null): string[] {
  const urls = application.type === 'OAUTH' ? [target, ...application.redirectUris] : [target];
  const origins = new Set<string>();
  for (const url of urls) if (url && URL.canParse(url)) origins.add(new URL(url).origin);
  return [...origins];
}

/** `target` with `name=value` added to its query (a return URL may have a query of its own). */
export function withQueryParameter(target: string, name: string, value: string): string {
  return `${target}${target.includes('?') ? '&' : '?'}${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
}
