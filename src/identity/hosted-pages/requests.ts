/**
 * What the hosted pages' routes read from a request: a cookie, and whether the browser says the
 * form came from another site. Shared so that every such route (sign-out, the account page) refuses
 * the same requests.
 */
import type { FastifyRequest } from 'fastify';

export function readRequestCookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * True when the browser says the POST came from elsewhere: Sec-Fetch-Site other than same-origin
 * (which also covers a sibling subdomain), or an Origin other than the public one. Browsers send
 * `Origin: null` from our own no-referrer pages, so that value proves nothing either way. No CSRF
 * token besides: the SSO cookie is SameSite=Lax, so a cross-site POST does not carry it anyway.
 */
export function isCrossSitePost(request: FastifyRequest, publicOrigin: string): boolean {
  const { origin, 'sec-fetch-site': site } = request.headers;
  return (site !== undefined && site !== 'same-origin') || (origin !== undefined && origin !== 'null' && origin !== publicOrigin);
}
