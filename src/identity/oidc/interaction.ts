/**
 * The provider's interaction: a valid login ticket (from the magic-link landing) for this customer
 * and this client signs the user in; otherwise the browser's SSO session does, when it satisfies the
 * application's login policy; otherwise the hosted sign-in starts, and comes back here once the
 * session does. The scopes asked for are granted (the application is the customer's own: no consent
 * screen).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readRequestCookie } from '../hosted-pages/requests.ts';
import { logServerError } from '../../http/app.ts';
import { asServiceUnavailable } from '../../lib/errors.ts';
import { toWire } from '../errors.ts';
import { PAGE_HEADERS, useTheLinkPage } from './pages.ts';
import { SCOPES, type InteractionDetails } from './provider.ts';
import { TICKET_COOKIE } from './repo.ts';
import type { CustomerProvider, OidcService } from './service.ts';
import type { Application } from '../applications/types.ts';
import type { SignInService } from '../sign-in/service.ts';
import { startSignIn } from '../sign-in/routes.ts';
import { signInEndedPage } from '../sign-in/pages.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { SSO_COOKIE } from '../sso-sessions/service.ts';

/** What the interaction needs of the hosted sign-in. */
export interface InteractionSignIn {
  signIn: SignInService;
  findApplication(customerId: number, uuid: string): Promise<Application | undefined>;
  publicUrl: string;
}

/**
 * Nothing to continue: no interaction cookie, an expired interaction, another's uid, or a client that is
 * no longer an application. Without the hosted sign-in (a provider used alone) the magic link is the only way in.
 */
function useTheLink(reply: FastifyReply, signIn?: InteractionSignIn): FastifyReply {
  if (signIn) return reply.code(403).headers(securityHeaders()).type('text/html; charset=utf-8').send(signInEndedPage());
  return reply.code(403).headers(PAGE_HEADERS).send(useTheLinkPage());
}

export async function handleInteraction(oidc: OidcService, entry: CustomerProvider, request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply, signIn?: InteractionSignIn): Promise<FastifyReply | void> {
  const { provider, customer } = entry;
  let details: InteractionDetails;
  try {
    details = await provider.interactionDetails(request.raw, reply.raw);
  } catch (error) {
    // The database is down: refused as such (503, mount.ts), not taken for a missing interaction.
    if (asServiceUnavailable(error)) throw error;
    // No interaction cookie, or an expired interaction: nothing to continue.
    return useTheLink(reply, signIn);
  }
  const clientId = details.params.client_id;
  if (details.uid !== request.params.uid || typeof clientId !== 'string') return useTheLink(reply, signIn);

  const value = readRequestCookie(request, TICKET_COOKIE);
  if (value) {
    const ticket = await oidc.consumeTicket(customer.id, value, clientId);
    const user = ticket && await oidc.users.findById(customer.id, ticket.userId);
    if (ticket && user && !user.isDisabled) return finishLogin(entry, request, reply, details, String(user.id), ticket.amr);
    if (!signIn) return useTheLink(reply, signIn);
  }
  if (!signIn) return useTheLink(reply, signIn);

  const application = await signIn.findApplication(customer.id, clientId);
  if (!application) return useTheLink(reply, signIn);
  const signedIn = await signIn.signIn.satisfyingSession(customer.id, application, readRequestCookie(request, SSO_COOKIE));
  if (signedIn) return finishLogin(entry, request, reply, details, String(signedIn.user.id), signedIn.session.amr);
  // The sign-in comes back to this interaction, which then finds the session.
  return startSignIn(signIn.signIn, signIn.publicUrl, request, reply, entry, application, `${entry.issuer}/interaction/${details.uid}`);
}

/** Hands the login and the grant to oidc-provider, which redirects on to the client. */
async function finishLogin(entry: CustomerProvider, request: FastifyRequest, reply: FastifyReply, details: InteractionDetails, accountId: string, amr: readonly string[]): Promise<void> {
  const { provider, issuerPath } = entry;
  const clientId = details.params.client_id as string;
  const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  const grant = existing && existing.accountId === accountId && existing.clientId === clientId
    ? existing
    : new provider.Grant({ accountId, clientId });
  const requested = String(details.params.scope ?? '').split(' ').filter((scope) => SCOPES.includes(scope));
  grant.addOIDCScope(requested.join(' '));
  if (details.prompt.details.missingOIDCClaims?.length) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
  const grantId = await grant.save();

  reply.hijack();
  // A ticket, if any, is spent: the browser may forget it.
  reply.raw.setHeader('set-cookie', `${TICKET_COOKIE}=; Path=${issuerPath}/interaction; Max-Age=0; HttpOnly; SameSite=Lax`);
  for (const [name, headerValue] of Object.entries(PAGE_HEADERS)) if (name !== 'content-type') reply.raw.setHeader(name, headerValue);
  try {
    await provider.interactionFinished(request.raw, reply.raw, {
      // remember: false — a browser-session cookie; the SSO session (lk_sso) is what lasts, and the
      // login prompt's check (provider.ts) asks again once it has ended.
      login: { accountId, amr: [...amr], remember: false },
      consent: { grantId },
    }, { mergeWithLastSubmission: false });
  } catch (error) {
    // Hijacked: Fastify can no longer answer, so an error here (the database gone while the result is
    // saved) is answered here, or the browser would wait for ever.
    logServerError(request.log, error);
    if (reply.raw.headersSent) { reply.raw.destroy(); return; }
    const wire = toWire(error, 'interaction');
    reply.raw.statusCode = wire.status;
    reply.raw.setHeader('content-type', wire.type ?? 'text/html; charset=utf-8');
    for (const [name, value] of Object.entries(wire.headers ?? {})) reply.raw.setHeader(name, value);
    reply.raw.end(typeof wire.body === 'string' ? wire.body : JSON.stringify(wire.body));
  }
}
