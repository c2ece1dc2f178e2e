/**
 * `<issuer>/logout` (GET: a page with a `Sign out` button; POST: this browser's SSO session of the
 * customer ends, its cookie is removed, and so does the customer's OpenID provider session, so no
 * application of the customer signs in again without the sign-in page). Registered in the identity
 * face as /customers/:customerKey/logout: a static segment, which Fastify prefers to the provider's
 * wildcard route.
 *
 * No CSRF token: the session cookie is SameSite=Lax, so a cross-site POST does not carry it; besides,
 * a POST the browser says came from elsewhere is refused (hosted-pages/requests.ts).
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { installPartErrors } from '../errors.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { isCrossSitePost, readRequestCookie } from '../hosted-pages/requests.ts';
import type { OidcService } from '../oidc/service.ts';
import { SSO_COOKIE, type SsoSessionsService } from '../sso-sessions/service.ts';
import { refusedPage, signedOutPage, signOutPage } from './pages.ts';

export interface SignOutOptions {
  oidc: Pick<OidcService, 'providerFor'>;
  ssoSessions: Pick<SsoSessionsService, 'end' | 'clearCookie'>;
  /** LATCHKEY_PUBLIC_URL: the only origin a sign-out POST may come from. */
  publicUrl: string;
}

type Params = { customerKey: string };

function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).headers(securityHeaders()).type('text/html; charset=utf-8').send(body);
}

export async function signOutRoutes(app: FastifyInstance, opts: SignOutOptions): Promise<void> {
  const { oidc, ssoSessions } = opts;
  const publicOrigin = new URL(opts.publicUrl).origin;
  await app.register(formbody);
  installPartErrors(app, 'landing');

  const schema = { hide: true, params: { type: 'object', properties: { customerKey: { type: 'string', maxLength: 40 } } } } as const;

  app.get<{ Params: Params }>('/customers/:customerKey/logout', { schema }, async (request, reply) => {
    if (!await oidc.providerFor(request.params.customerKey)) return reply.callNotFound();
    return html(reply, 200, signOutPage());
  });

  app.post<{ Params: Params }>('/customers/:customerKey/logout', { schema }, async (request, reply) => {
    const entry = await oidc.providerFor(request.params.customerKey);
    if (!entry) return reply.callNotFound();
    if (isCrossSitePost(request, publicOrigin)) return html(reply, 403, refusedPage());
    await ssoSessions.end(entry.customer.id, readRequestCookie(request, SSO_COOKIE));
    // The provider's own session too (oidc-provider reads and verifies its signed cookie itself): else
    // an application whose grant it still holds would get a code without the sign-in page.
    const providerSession = await entry.provider.Session.get({ req: request.raw, res: reply.raw });
    if (providerSession.accountId) await providerSession.destroy();
    reply.header('set-cookie', ssoSessions.clearCookie(entry.issuerPath));
    return html(reply, 200, signedOutPage());
  });
}

export const signOutPlugin = (opts: SignOutOptions) => (app: FastifyInstance) => signOutRoutes(app, opts);
