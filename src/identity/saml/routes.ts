/**
 * The SAML identity provider under each customer's issuer: `saml/metadata`; `saml/sso` (an AuthnRequest
 * by HTTP-Redirect or HTTP-POST, or `?app=<uuid>` for an IdP-initiated sign-in); `saml/continue/<id>`,
 * where a held request is answered once the browser has signed in; `saml/slo` (a LogoutRequest by
 * either binding). A refused request is a 400 page with no form: nothing is posted anywhere.
 * A cross-site POST does not carry the SSO cookie (SameSite=Lax): a request that finds no session is
 * held and the browser is sent to the continue URL by GET, which does.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { installPartErrors } from '../errors.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { readRequestCookie } from '../hosted-pages/requests.ts';
import type { Application } from '../applications/types.ts';
import type { CustomerProvider } from '../oidc/service.ts';
import { signInEndedPage } from '../sign-in/pages.ts';
import { startSignIn } from '../sign-in/routes.ts';
import type { SignInService } from '../sign-in/service.ts';
import { SSO_COOKIE, type SsoSessionsService } from '../sso-sessions/service.ts';
import { readPostBinding, readRedirectBinding, type IncomingSamlMessage } from './bindings.ts';
import { badSamlRequestPage, notSignedInPage, postFormHeaders, postFormPage, signedOutPage } from './pages.ts';
import type { SamlService } from './service.ts';
import { PENDING_TTL_MS, type PostForm, type SamlAnswer } from './types.ts';
import { SamlXmlError } from './xml.ts';

/** Binds a held request to the browser that sent it. */
export const SAML_COOKIE = 'lk_saml';
const METADATA_MAX_AGE_SECONDS = 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface SamlRoutesOptions {
  saml: SamlService;
  signIn: SignInService;
  ssoSessions: Pick<SsoSessionsService, 'clearCookie'>;
  /** The customer's issuer and path (undefined: an unknown customer key). */
  providerFor(customerKey: string): Promise<CustomerProvider | undefined>;
  /** LATCHKEY_PUBLIC_URL: https makes the cookie Secure. */
  publicUrl: string;
}

type Params = { customerKey: string };

function html(reply: FastifyReply, status: number, body: string, headers: Record<string, string> = securityHeaders()): FastifyReply {
  return reply.code(status).headers(headers).type('text/html; charset=utf-8').send(body);
}

/** The query string exactly as received: a Redirect-binding signature is over its raw octets. */
function rawQuery(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at + 1);
}

function queryParameter(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

export function samlRoutes(opts: SamlRoutesOptions) {
  const { saml, signIn } = opts;
  const secure = opts.publicUrl.startsWith('https:') ? '; Secure' : '';

  function refused(request: FastifyRequest, reply: FastifyReply, reason: string): FastifyReply {
    request.log.info({ samlRefused: reason }, 'SAML request refused');
    return html(reply, 400, badSamlRequestPage(reason));
  }

  const sendForm = (reply: FastifyReply, form: PostForm, title?: string) => html(reply, 200, postFormPage(form, title), postFormHeaders(form));

  /** Answers now with a satisfying session (unless the request forces a sign-in); else holds it and sends the browser to continue. */
  async function answerOrHold(
    request: FastifyRequest, reply: FastifyReply, entry: CustomerProvider, application: Application, answer: SamlAnswer,
    options: { forceAuthn: boolean; isPassive: boolean },
  ): Promise<FastifyReply> {
    if (!options.forceAuthn) {
      const signedIn = await signIn.satisfyingSession(entry.customer.id, application, readRequestCookie(request, SSO_COOKIE));
      if (signedIn) return sendForm(reply, await saml.respond(entry.customer.id, entry.issuer, application, signedIn, answer));
    }
    const held = await saml.hold(entry.customer.id, application, answer, { ...options, browserValue: readRequestCookie(request, SAML_COOKIE) });
    return reply.code(303).headers(securityHeaders())
      .header('set-cookie', `${SAML_COOKIE}=${held.browserValue}; Path=${entry.issuerPath}/saml/; Max-Age=${PENDING_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`)
      .header('location', `${entry.issuerPath}/saml/continue/${held.pendingId}`).send();
  }

  /** The message from its binding, or why it cannot be read (the 400 page's text). */
  function readMessage(read: () => IncomingSamlMessage): IncomingSamlMessage | { refusal: string } {
    try {
      return read();
    } catch (error) {
      if (error instanceof SamlXmlError) return { refusal: error.message };
      throw error;
    }
  }

  /** An AuthnRequest, read from its binding: checked, then answered or held. */
  async function authnRequest(request: FastifyRequest, reply: FastifyReply, entry: CustomerProvider, read: () => IncomingSamlMessage): Promise<FastifyReply> {
    const message = readMessage(read);
    if ('refusal' in message) return refused(request, reply, message.refusal);
    const checked = await saml.checkAuthnRequest(entry.customer.id, entry.issuer, message);
    if (!checked.ok) return refused(request, reply, checked.reason);
    request.log.info({ samlRequestId: checked.answer.requestId, samlEntityId: checked.application.saml!.entityId }, 'SAML AuthnRequest accepted');
    return answerOrHold(request, reply, entry, checked.application, checked.answer, checked);
  }

  async function logoutRequest(request: FastifyRequest, reply: FastifyReply, entry: CustomerProvider, read: () => IncomingSamlMessage): Promise<FastifyReply> {
    const message = readMessage(read);
    if ('refusal' in message) return refused(request, reply, message.refusal);
    const outcome = await saml.logout(entry.customer.id, entry.issuer, message, readRequestCookie(request, SSO_COOKIE), request.auditContext);
    if (!outcome.ok) return refused(request, reply, outcome.reason);
    reply.header('set-cookie', opts.ssoSessions.clearCookie(entry.issuerPath));
    const { answer } = outcome;
    if (answer.kind === 'signed-out') return html(reply, 200, signedOutPage(answer.applicationName));
    if (answer.kind === 'post') return sendForm(reply, answer.form, 'Signing you out');
    return reply.code(303).headers(securityHeaders()).header('location', answer.location).send();
  }

  return async function routes(app: FastifyInstance): Promise<void> {
    await app.register(formbody);
    installPartErrors(app, 'sign-in');
    const params = { type: 'object', properties: { customerKey: { type: 'string', maxLength: 20 }, pendingId: { type: 'string', maxLength: 100 } } } as const;
    const schema = { hide: true, params };
    const customer = async (request: FastifyRequest<{ Params: Params }>) => opts.providerFor(request.params.customerKey);

    app.get<{ Params: Params }>('/customers/:customerKey/saml/metadata', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      // Public and the same bytes on every node until the signing key changes: caches may keep it an hour.
      return reply.code(200).header('cache-control', `public, max-age=${METADATA_MAX_AGE_SECONDS}`).header('x-content-type-options', 'nosniff')
        .type('application/samlmetadata+xml').send(await saml.metadataXml(entry.customer.id, entry.issuer));
    });

    app.get<{ Params: Params }>('/customers/:customerKey/saml/sso', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      const appUuid = queryParameter(request, 'app');
      if (queryParameter(request, 'SAMLRequest') === undefined && appUuid !== undefined) {
        const found = UUID.test(appUuid) ? await saml.unsolicited(entry.customer.id, appUuid) : undefined;
        if (!found) return refused(request, reply, 'The application is unknown, or it does not sign in with SAML.');
        return answerOrHold(request, reply, entry, found.application, found.answer, { forceAuthn: false, isPassive: false });
      }
      return authnRequest(request, reply, entry, () => readRedirectBinding(rawQuery(request), 'SAMLRequest'));
    });

    app.post<{ Params: Params }>('/customers/:customerKey/saml/sso', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      return authnRequest(request, reply, entry, () => readPostBinding((request.body ?? {}) as Record<string, unknown>, 'SAMLRequest'));
    });

    app.get<{ Params: Params & { pendingId: string } }>('/customers/:customerKey/saml/continue/:pendingId', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      const held = await saml.findHeld(entry.customer.id, request.params.pendingId, readRequestCookie(request, SAML_COOKIE));
      if (!held) return html(reply, 410, signInEndedPage());
      const { pending, application } = held;
      const ssoValue = readRequestCookie(request, SSO_COOKIE);
      const signedIn = await saml.mayAnswer(pending, ssoValue) ? await signIn.satisfyingSession(entry.customer.id, application, ssoValue) : undefined;
      if (signedIn) {
        // Single use: of two tabs continuing the same request, one posts the Response.
        if (!await saml.release(pending)) return html(reply, 410, signInEndedPage());
        return sendForm(reply, await saml.respond(entry.customer.id, entry.issuer, application, signedIn, pending));
      }
      if (pending.isPassive) {
        await saml.release(pending);
        return html(reply, 200, notSignedInPage(application.name));
      }
      return startSignIn(signIn, opts.publicUrl, request, reply, entry, application, `${entry.issuer}/saml/continue/${request.params.pendingId}`);
    });

    app.get<{ Params: Params }>('/customers/:customerKey/saml/slo', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      return logoutRequest(request, reply, entry, () => readRedirectBinding(rawQuery(request), 'SAMLRequest'));
    });

    app.post<{ Params: Params }>('/customers/:customerKey/saml/slo', { schema }, async (request, reply) => {
      const entry = await customer(request);
      if (!entry) return reply.callNotFound();
      return logoutRequest(request, reply, entry, () => readPostBinding((request.body ?? {}) as Record<string, unknown>, 'SAMLRequest'));
    });
  };
}
