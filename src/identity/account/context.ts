/**
 * What every account route needs: the reply helpers, the signed-in check (the customer, a same-site
 * POST, a live SSO session) and the step-up cookie. Shared by the route files of the page's sections.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actingUser } from '../../audit/context.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { isCrossSitePost, readRequestCookie } from '../hosted-pages/requests.ts';
import type { OidcService } from '../oidc/service.ts';
import { SSO_COOKIE, type SignedIn, type SsoSessionsService } from '../sso-sessions/service.ts';
import { notSignedInPage, refusedPage } from './pages.ts';
import { STEP_UP_COOKIE, STEP_UP_MS } from './step-up.ts';

export type Params = { customerKey: string };
export type Entry = NonNullable<Awaited<ReturnType<OidcService['providerFor']>>>;
export interface Found { entry: Entry; signedIn: SignedIn }

export const schema = { hide: true, params: { type: 'object', properties: { customerKey: { type: 'string', maxLength: 40 } } } } as const;

export function html(reply: FastifyReply, status: number, body: string, headers: Record<string, string> = securityHeaders()): FastifyReply {
  return reply.code(status).headers(headers).type('text/html; charset=utf-8').send(body);
}

export function text(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

export function displayName(user: SignedIn['user']): string {
  return [user.firstName, user.lastName].filter(Boolean).join(' ') || user.username;
}

export function stepUpProof(request: FastifyRequest): string | undefined {
  return readRequestCookie(request, STEP_UP_COOKIE);
}

/** The step-up cookie: only the account pages see it, for as long as it counts. */
export function stepUpCookie(issuerPath: string, proof: string, secure: boolean): string {
  return `${STEP_UP_COOKIE}=${proof}; Path=${issuerPath}/account; Max-Age=${STEP_UP_MS / 1000}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function makeSignedIn(deps: {
  oidc: Pick<OidcService, 'providerFor'>;
  ssoSessions: Pick<SsoSessionsService, 'current'>;
  publicOrigin: string;
}) {
  /**
   * The customer and the browser's signed-in user, or the reply already sent: 404 for an unknown
   * customer, 403 for a cross-site POST, 401 without a live session.
   */
  return async function signedIn(request: FastifyRequest<{ Params: Params }>, reply: FastifyReply, post: boolean): Promise<Found | undefined> {
    const entry = await deps.oidc.providerFor(request.params.customerKey);
    if (!entry) {
      await reply.callNotFound();
      return undefined;
    }
    if (post && isCrossSitePost(request, deps.publicOrigin)) {
      await html(reply, 403, refusedPage());
      return undefined;
    }
    const current = await deps.ssoSessions.current(entry.customer.id, readRequestCookie(request, SSO_COOKIE));
    if (!current) {
      await html(reply, 401, notSignedInPage());
      return undefined;
    }
    // What the signed-in user changes here is theirs in the audit log.
    request.auditContext = actingUser(request.auditContext, current.user);
    return { entry, signedIn: current };
  };
}
