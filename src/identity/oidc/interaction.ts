/**
 * The provider's interaction: no login form of ours. A valid login ticket (from the magic-link
 * landing) for this customer and this client signs the user in and grants the requested scopes
 * (the application is the customer's own: no consent screen); otherwise a page says to use the
 * link from the e-mail.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { logServerError } from '../../http/app.ts';
import { asServiceUnavailable } from '../../lib/errors.ts';
import { noStorePage, PAGE_HEADERS, unavailablePage, useTheLinkPage } from './pages.ts';
import { SCOPES, type InteractionDetails } from './provider.ts';
import { TICKET_COOKIE } from './repo.ts';
import type { CustomerProvider, OidcService } from './service.ts';

function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

function useTheLink(reply: FastifyReply): FastifyReply {
  return reply.code(403).headers(PAGE_HEADERS).send(useTheLinkPage());
}

export async function handleInteraction(oidc: OidcService, entry: CustomerProvider, request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply): Promise<FastifyReply | void> {
  const { provider, customer, issuerPath } = entry;
  let details: InteractionDetails;
  try {
    details = await provider.interactionDetails(request.raw, reply.raw);
  } catch (error) {
    // The database is down: refused as such (503, mount.ts), not taken for a missing interaction.
    if (asServiceUnavailable(error)) throw error;
    // No interaction cookie, or an expired interaction: nothing to continue.
    return useTheLink(reply);
  }
  const clientId = details.params.client_id;
  const value = readCookie(request.headers.cookie, TICKET_COOKIE);
  if (details.uid !== request.params.uid || typeof clientId !== 'string' || !value) return useTheLink(reply);

  const ticket = await oidc.consumeTicket(customer.id, value, clientId);
  const user = ticket && await oidc.users.findById(customer.id, ticket.userId);
  if (!ticket || !user || user.isDisabled) return useTheLink(reply);

  const accountId = String(user.id);
  const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  const grant = existing && existing.accountId === accountId && existing.clientId === clientId
    ? existing
    : new provider.Grant({ accountId, clientId });
  const requested = String(details.params.scope ?? '').split(' ').filter((scope) => SCOPES.includes(scope));
  grant.addOIDCScope(requested.join(' '));
  if (details.prompt.details.missingOIDCClaims?.length) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
  const grantId = await grant.save();

  reply.hijack();
  // The ticket is spent: the browser may forget it.
  reply.raw.setHeader('set-cookie', `${TICKET_COOKIE}=; Path=${issuerPath}/interaction; Max-Age=0; HttpOnly; SameSite=Lax`);
  for (const [name, headerValue] of Object.entries(PAGE_HEADERS)) if (name !== 'content-type') reply.raw.setHeader(name, headerValue);
  try {
    await provider.interactionFinished(request.raw, reply.raw, {
      // remember: false — a browser-session cookie: the magic link, not the provider, is the way in.
      login: { accountId, amr: ticket.amr, remember: false },
      consent: { grantId },
    }, { mergeWithLastSubmission: false });
  } catch (error) {
    // Hijacked: Fastify can no longer answer, so an error here (the database gone while the result is
    // saved) is answered here, or the browser would wait for ever.
    const unavailable = asServiceUnavailable(error);
    logServerError(request.log, error);
    if (reply.raw.headersSent) { reply.raw.destroy(); return; }
    reply.raw.statusCode = unavailable ? 503 : 500;
    reply.raw.setHeader('content-type', 'text/html; charset=utf-8');
    if (unavailable) reply.raw.setHeader('retry-after', String(unavailable.retryAfterSeconds));
    reply.raw.end(unavailable ? unavailablePage(unavailable.retryAfterSeconds)
      : noStorePage('Sign-in failed', ['The sign-in could not be completed. Start again from the application.']));
  }
}
