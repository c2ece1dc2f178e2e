/**
 * The hosted sign-in on the identity face, under each customer's issuer (static segments, so Fastify
 * routes them here before the OpenID provider's wildcard): the flow's page `<issuer>/sign-in/<flowId>`
 * (GET shows the step, POST submits it) and the JWT applications' `<issuer>/jwt/authorize`. A flow is
 * bound to its browser by the `lk_signin` cookie (HttpOnly, SameSite=Lax, the issuer's path).
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { JWTPayload } from 'jose';
import { installPartErrors } from '../errors.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { readRequestCookie } from '../hosted-pages/requests.ts';
import type { Application } from '../applications/types.ts';
import { redirectOrigins, withQueryParameter } from '../magic-links/redirect.ts';
import type { CustomerProvider } from '../oidc/service.ts';
import { SSO_COOKIE } from '../sso-sessions/service.ts';
import { ID_TOKEN_TTL_SECONDS, idTokenClaims } from './id-token.ts';
import { badSignInRequestPage, signInEndedPage, signInPage, usesPasskeys } from './pages.ts';
import { loginLinkTarget, type FlowContext, type Outcome, type PasskeyOutcome, type SignInService, type StepInput } from './service.ts';

export const FLOW_COOKIE = 'lk_signin';

export interface SignInRoutesOptions {
  signIn: SignInService;
  /** The customer's issuer and path (undefined: an unknown customer key). */
  providerFor(customerKey: string): Promise<CustomerProvider | undefined>;
  findApplication(customerId: number, uuid: string): Promise<Application | undefined>;
  signJwt(customerId: number, claims: JWTPayload, options: { ttlSeconds: number }): Promise<string>;
  /** LATCHKEY_PUBLIC_URL: https makes the cookie Secure. */
  publicUrl: string;
}

type Params = { customerKey: string; flowId: string };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A query parameter given once; repeated counts as missing (never pick one of two). */
function single(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

function html(reply: FastifyReply, status: number, body: string, headers: Record<string, string> = securityHeaders()): FastifyReply {
  return reply.code(status).headers(headers).type('text/html; charset=utf-8').send(body);
}

function text(body: unknown, name: string): string | undefined {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Starts a flow for the browser (its binding cookie kept or set) and sends it to the flow's first
 * page; the protocols' way in (the OAUTH interaction, JWT authorize, SAML).
 */
export async function startSignIn(
  signIn: SignInService, publicUrl: string, request: FastifyRequest, reply: FastifyReply,
  entry: Pick<CustomerProvider, 'customer' | 'issuerPath'>, application: Application, returnTo: string,
): Promise<FastifyReply> {
  const { flowId, browserValue } = await signIn.start({
    customerId: entry.customer.id, application, returnTo,
    browserValue: readRequestCookie(request, FLOW_COOKIE), ssoValue: readRequestCookie(request, SSO_COOKIE),
  });
  const secure = publicUrl.startsWith('https:') ? '; Secure' : '';
  return reply.code(303).headers(securityHeaders())
    .header('set-cookie', `${FLOW_COOKIE}=${browserValue}; Path=${entry.issuerPath}/; HttpOnly; SameSite=Lax${secure}`)
    .header('location', `${entry.issuerPath}/sign-in/${flowId}`).send();
}

export function signInRoutes(opts: SignInRoutesOptions) {
  const { signIn } = opts;

  const startFlow = (request: FastifyRequest, reply: FastifyReply, entry: CustomerProvider, application: Application, returnTo: string) =>
    startSignIn(signIn, opts.publicUrl, request, reply, entry, application, returnTo);

  function render(reply: FastifyReply, entry: CustomerProvider, flowId: string, outcome: Outcome): FastifyReply {
    if (outcome.kind === 'ended') return html(reply, 410, signInEndedPage());
    if (outcome.kind === 'done') {
      return reply.code(303).headers(securityHeaders()).header('set-cookie', outcome.cookie).header('location', outcome.location).send();
    }
    // Browsers apply CSP form-action to the redirects after the POST: the application's origins are allowed.
    const headers = securityHeaders(redirectOrigins(outcome.application, loginLinkTarget(outcome.application, outcome.returnTo)), { passkeys: usesPasskeys(outcome.view) });
    // The enrolment's QR code is a data: image; no other page shows one.
    if (outcome.view.step === 'enrol' && outcome.view.authenticator) headers['content-security-policy'] = headers['content-security-policy']!.replace("img-src 'none'", 'img-src data:');
    return html(reply, outcome.status, signInPage(outcome.application.name, outcome.view, entry.issuerPath, `${entry.issuerPath}/sign-in/${flowId}`), headers);
  }

  /** The passkey calls' JSON: where the browser goes next, or what to say. */
  function answer(reply: FastifyReply, entry: CustomerProvider, flowId: string, outcome: PasskeyOutcome): FastifyReply {
    const json = (status: number, body: object) => reply.code(status).headers(securityHeaders()).type('application/json; charset=utf-8').send(body);
    switch (outcome.kind) {
      case 'options': return json(200, { ceremonyId: outcome.ceremonyId, options: outcome.options });
      case 'next': return json(200, { location: `${entry.issuerPath}/sign-in/${flowId}` });
      case 'done':
        reply.header('set-cookie', outcome.cookie);
        return json(200, { location: outcome.location });
      case 'refused': return json(401, { message: outcome.message });
      // The flow's page says it ended (and what to do).
      case 'ended': return json(410, { message: 'This sign-in has ended.', location: `${entry.issuerPath}/sign-in/${flowId}` });
    }
  }

  function context(request: FastifyRequest<{ Params: Params }>, entry: CustomerProvider): FlowContext {
    return {
      customer: { id: entry.customer.id, displayName: entry.customer.displayName },
      issuerPath: entry.issuerPath,
      flowId: request.params.flowId,
      browserValue: readRequestCookie(request, FLOW_COOKIE),
      ssoValue: readRequestCookie(request, SSO_COOKIE),
      browser: { userAgent: request.headers['user-agent'], address: request.ip },
      audit: request.auditContext,
    };
  }

  return async function routes(app: FastifyInstance): Promise<void> {
    await app.register(formbody);
    installPartErrors(app, 'sign-in');
    app.addHook('onClose', () => signIn.idle());
    const params = { type: 'object', properties: { customerKey: { type: 'string', maxLength: 20 }, flowId: { type: 'string', maxLength: 100 } } } as const;

    app.get<{ Params: Params }>('/customers/:customerKey/sign-in/:flowId', { schema: { hide: true, params } }, async (request, reply) => {
      const entry = await opts.providerFor(request.params.customerKey);
      if (!entry) return reply.callNotFound();
      const recovery = single(request.query, 'recovery') !== undefined;
      return render(reply, entry, request.params.flowId, await signIn.show(context(request, entry), { recovery }));
    });

    app.post<{ Params: Params }>('/customers/:customerKey/sign-in/:flowId', { schema: { hide: true, params } }, async (request, reply) => {
      const entry = await opts.providerFor(request.params.customerKey);
      if (!entry) return reply.callNotFound();
      const body = request.body;
      const input: StepInput = {
        username: text(body, 'username'),
        password: text(body, 'password'),
        code: text(body, 'code'),
        otp: text(body, 'otp'),
        recoveryCode: text(body, 'recovery_code'),
        secret: text(body, 'secret'),
        newPassword: text(body, 'new_password'),
        confirmPassword: text(body, 'confirm_password'),
        proceed: text(body, 'proceed') !== undefined,
      };
      return render(reply, entry, request.params.flowId, await signIn.submit(context(request, entry), input));
    });

    // The passkey buttons' JSON calls (assets/passkeys.js): the ceremony's options, then the browser's answer.
    const ceremonyBody = {
      type: 'object',
      properties: { ceremonyId: { type: 'string', maxLength: 100 }, response: { type: 'object' }, name: { type: 'string', maxLength: 200 } },
    } as const;
    app.post<{ Params: Params }>('/customers/:customerKey/sign-in/:flowId/passkey/options', { schema: { hide: true, params } }, async (request, reply) => {
      const entry = await opts.providerFor(request.params.customerKey);
      if (!entry) return reply.callNotFound();
      return answer(reply, entry, request.params.flowId, await signIn.passkeyOptions(context(request, entry)));
    });
    app.post<{ Params: Params; Body: { ceremonyId?: string; response?: unknown; name?: string } }>(
      '/customers/:customerKey/sign-in/:flowId/passkey/verify', { schema: { hide: true, params, body: ceremonyBody } }, async (request, reply) => {
        const entry = await opts.providerFor(request.params.customerKey);
        if (!entry) return reply.callNotFound();
        const { ceremonyId, response, name } = request.body ?? {};
        if (typeof ceremonyId !== 'string' || typeof response !== 'object' || response === null) {
          return answer(reply, entry, request.params.flowId, { kind: 'refused', message: 'The passkey was not accepted.' });
        }
        return answer(reply, entry, request.params.flowId, await signIn.passkeyVerify(context(request, entry), { ceremonyId, response, name }));
      });

    // DESIGN.md, JWT applications: a bad request is a 400 page and is never redirected anywhere.
    app.get<{ Params: { customerKey: string } }>('/customers/:customerKey/jwt/authorize', { schema: { hide: true } }, async (request, reply) => {
      const entry = await opts.providerFor(request.params.customerKey);
      if (!entry) return reply.callNotFound();
      const clientId = single(request.query, 'client_id');
      const redirectUri = single(request.query, 'redirect_uri');
      const state = single(request.query, 'state');
      const stateGiven = (request.query as Record<string, unknown>)?.state !== undefined;
      const application = clientId && UUID.test(clientId) ? await opts.findApplication(entry.customer.id, clientId) : undefined;
      if (!application || application.type !== 'JWT') return html(reply, 400, badSignInRequestPage('The application is unknown, or it does not sign in this way.'));
      if (redirectUri === undefined || !application.returnUrls.includes(redirectUri)) {
        return html(reply, 400, badSignInRequestPage('The return address is missing or is not one of the application’s return URLs.'));
      }
      if (stateGiven && state === undefined) return html(reply, 400, badSignInRequestPage('The state parameter is given more than once.'));

      const signedIn = await signIn.satisfyingSession(entry.customer.id, application, readRequestCookie(request, SSO_COOKIE));
      if (!signedIn) {
        const query = request.raw.url!.slice(request.raw.url!.indexOf('?'));
        return startFlow(request, reply, entry, application, `${entry.issuer}/jwt/authorize${query}`);
      }
      const idToken = await opts.signJwt(entry.customer.id, idTokenClaims(entry.issuer, application.uuid, signedIn.user, signedIn.session.amr),
        { ttlSeconds: ID_TOKEN_TTL_SECONDS });
      let location = withQueryParameter(redirectUri, 'id_token', idToken);
      if (state !== undefined) location = withQueryParameter(location, 'state', state);
      return reply.code(303).headers(securityHeaders()).header('location', location).send();
    });
  };
}
