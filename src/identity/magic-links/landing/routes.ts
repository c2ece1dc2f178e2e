/**
 * The magic-link landing on the identity face (outside /api, no admin auth), for INVITE and LOGIN
 * links alike: GET /magic/<token> shows a button and never uses the link (mail scanners prefetch
 * links); POST uses it (one winner among concurrent POSTs), asks for the second factor when the
 * policy wants one (the authenticator code at POST /magic/code, a passkey through the served script's
 * JSON calls to /magic/passkey, or a recovery code at /magic/recovery: a pending login behind an
 * HttpOnly cookie, 5 attempts in all), then opens the customer's SSO session (its cookie, scoped to the
 * issuer's path) and signs the user in to the application.
 * The token never reaches a log line: the URL is redacted as soon as the route is known.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { installPartErrors } from '../../errors.ts';
import type { AuthMethod } from '../../sso-sessions/types.ts';
import { requirements } from '../../sign-in/factors.ts';
import type { LiveLink } from '../types.ts';
import type { MagicLinksService, SecondFactorWays } from '../service.ts';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { PENDING_LOGIN_MS } from '../service.ts';
import {
  codePage, confirmPage, deadLinkPage, noAuthenticatorPage, noSignInPage, passkeyPage, recoveryCodePage, signedInPage, signInEndedPage,
} from './pages.ts';
import { securityHeaders } from '../../hosted-pages/layout.ts';
import { readRequestCookie } from '../../hosted-pages/requests.ts';
import { postFormHeaders, postFormPage } from '../../saml/pages.ts';

export const PENDING_COOKIE = 'lk_magic_login';
/** A passkey step that ends on a page of ours (SAML, a LOGIN link without a target): the application's name for GET /magic/done. */
const DONE_COOKIE = 'lk_magic_done';

export interface LandingOptions {
  magicLinks: MagicLinksService;
  /** LATCHKEY_PUBLIC_URL: https makes the cookie Secure. */
  publicUrl: string;
  /** Opens the session at the customer's OpenID provider (OAUTH applications) before the 303. */
  beginProviderLogin(reply: FastifyReply, login: { customerId: number; userId: number; applicationUuid: string; amr: string[] }): Promise<void>;
}

function html(reply: FastifyReply, status: number, body: string, redirectOrigins: string[] = [], passkeys = false): FastifyReply {
  return reply.code(status).headers(securityHeaders(redirectOrigins, { passkeys })).type('text/html; charset=utf-8').send(body);
}

function json(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).headers(securityHeaders()).send(body);
}

/** The second-factor step as the user's ways allow: the code (with a passkey too for ANY) or the passkey alone. */
function stepPage(reply: FastifyReply, status: number, step: { applicationName: string; redirectOrigins: string[]; ways: SecondFactorWays }, recovery: boolean, problem?: string): FastifyReply {
  const shown = step.ways.code ? codePage(step.applicationName, problem, recovery, step.ways.passkey) : passkeyPage(step.applicationName, problem, recovery);
  return html(reply, status, shown, step.redirectOrigins, step.ways.passkey);
}

export async function landingRoutes(app: FastifyInstance, opts: LandingOptions): Promise<void> {
  const { magicLinks } = opts;
  const secure = opts.publicUrl.startsWith('https:') ? '; Secure' : '';
  const pendingCookie = (value: string, maxAgeSeconds: number) =>
    `${PENDING_COOKIE}=${value}; Path=/magic; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;

  await app.register(formbody);

  // Routed already: the path's token is in request.params; the log lines of this request (the
  // final "request completed" included) see the URL without it.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.raw.url && !/^\/magic\/(?:code|recovery|passkey|passkey\/options|done)(?:$|\?)/.test(request.raw.url)) request.raw.url = '/magic/[token]';
    reply.headers(securityHeaders());
    done();
  });

  // Bad input, outages and unexpected errors: the landing's row of the face's table (identity/errors.ts).
  installPartErrors(app, 'landing');

  /** Completes the sign-in: its cookies on `reply`, then where the browser goes. */
  async function complete(request: FastifyRequest, reply: FastifyReply, live: LiveLink, amr: AuthMethod[]) {
    const completion = await magicLinks.complete(live, amr, { userAgent: request.headers['user-agent'], address: request.ip });
    // Path=<issuer>/ although this is /magic: a response may set a cookie for any path of its host.
    reply.header('set-cookie', completion.ssoCookie);
    if (completion.kind === 'redirect' && live.application.type === 'OAUTH') {
      await opts.beginProviderLogin(reply, {
        customerId: live.link.customerId, userId: live.user.id, applicationUuid: live.application.uuid, amr,
      });
    }
    return completion;
  }

  async function finish(request: FastifyRequest, reply: FastifyReply, live: LiveLink, amr: AuthMethod[]): Promise<FastifyReply> {
    const completion = await complete(request, reply, live, amr);
    if (completion.kind === 'saml') return reply.code(200).headers(postFormHeaders(completion.form)).type('text/html; charset=utf-8').send(postFormPage(completion.form));
    if (completion.kind === 'signed-in') return html(reply, 200, signedInPage(completion.applicationName));
    return reply.code(303).headers(securityHeaders(completion.redirectOrigins)).header('location', completion.location).send();
  }

  const tokenParams = { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } } as const;
  const schema = { hide: true, params: tokenParams };

  app.get('/magic/:token', { schema }, async (request, reply) => {
    const found = await magicLinks.inspect((request.params as { token: string }).token);
    if (found === 'dead') return html(reply, 410, deadLinkPage());
    if ('noAuthenticator' in found) return html(reply, 403, noAuthenticatorPage(found.noAuthenticator, found.missing));
    // The form has no action: it posts to this same address, so the page does not repeat the token.
    return html(reply, 200, confirmPage(found.application.name, found.user.email), found.redirectOrigins);
  });

  app.post('/magic/:token', { schema }, async (request, reply) => {
    const found = await magicLinks.consume((request.params as { token: string }).token, request.auditContext);
    if (found === 'dead') return html(reply, 410, deadLinkPage());
    if ('noAuthenticator' in found) return html(reply, 403, noAuthenticatorPage(found.noAuthenticator, found.missing));
    if (found.secondFactor !== 'NONE') {
      const pendingId = await magicLinks.startSecondFactor(found);
      const step = await magicLinks.pendingStep(pendingId);
      if (!step) return html(reply, 410, signInEndedPage());
      reply.header('set-cookie', pendingCookie(pendingId, PENDING_LOGIN_MS / 1000));
      return stepPage(reply, 200, step, magicLinks.acceptsRecoveryCodes);
    }
    return finish(request, reply, found, ['email']);
  });

  /** The pending login's step pages again (the links between the authenticator and the recovery code). */
  for (const path of ['/magic/code', '/magic/recovery'] as const) {
    app.get(path, { schema: { hide: true } }, async (request, reply) => {
      const pendingId = readRequestCookie(request, PENDING_COOKIE);
      if (!pendingId) return html(reply, 403, noSignInPage());
      const step = await magicLinks.pendingStep(pendingId);
      if (!step || (path === '/magic/recovery' && !magicLinks.acceptsRecoveryCodes)) return html(reply, 410, signInEndedPage());
      if (path === '/magic/recovery') return html(reply, 200, recoveryCodePage(step.applicationName, undefined, !step.ways.code), step.redirectOrigins);
      return stepPage(reply, 200, step, magicLinks.acceptsRecoveryCodes);
    });
  }

  /** A second-factor answer: the sign-in finishes (a recovery code counts as the second factor, otp), or the step again. */
  async function answer(request: FastifyRequest, reply: FastifyReply, recovery: boolean): Promise<FastifyReply> {
    const pendingId = readRequestCookie(request, PENDING_COOKIE) ?? '';
    const code = (request.body as { code?: unknown } | undefined)?.code;
    const typed = typeof code === 'string' ? code.trim() : '';
    const result = recovery ? await magicLinks.checkRecoveryCode(pendingId, typed, request.auditContext) : await magicLinks.checkSecondFactor(pendingId, typed, request.auditContext);
    if (result.ok) {
      reply.header('set-cookie', pendingCookie('', 0));
      // A recovery code stands in for the second factor the policy asks for (the passkey's hwk under PASSKEY), as at the sign-in.
      const shown = recovery ? requirements({ firstFactor: 'MAGIC_LINK', secondFactor: result.live.secondFactor }).second?.[0] ?? 'otp' : 'otp';
      return finish(request, reply, result.live, ['email', shown]);
    }
    if (result.reason === 'ended') {
      reply.header('set-cookie', pendingCookie('', 0));
      return html(reply, 410, signInEndedPage());
    }
    const left = attemptsLeft(result.attemptsLeft);
    const ways = (await magicLinks.pendingStep(pendingId))?.ways ?? { code: true, passkey: false };
    if (recovery) return html(reply, 400, recoveryCodePage(result.applicationName, `The recovery code is incorrect or already used (${left}).`, !ways.code), result.redirectOrigins);
    const problem = result.reason === 'replayed' ? `This code has already been used: wait for the next one (${left}).`
      : `The code is incorrect (${left}).`;
    return stepPage(reply, 400, { applicationName: result.applicationName, redirectOrigins: result.redirectOrigins, ways }, magicLinks.acceptsRecoveryCodes, problem);
  }

  app.post('/magic/code', { schema: { hide: true } }, (request, reply) => answer(request, reply, false));

  // The passkey: the served script's two JSON calls (/assets/passkeys.js); the answer says where to go.
  app.post('/magic/passkey/options', { schema: { hide: true } }, async (request, reply) => {
    const pendingId = readRequestCookie(request, PENDING_COOKIE);
    if (!pendingId) return json(reply, 403, { message: 'This browser has no sign-in in progress: open the link from your mail again.' });
    const started = await magicLinks.passkeyOptions(pendingId);
    if (!started) return json(reply, 410, { message: 'This sign-in has ended.', location: '/magic/code' });
    return json(reply, 200, started);
  });

  app.post('/magic/passkey', { schema: { hide: true } }, async (request, reply) => {
    const pendingId = readRequestCookie(request, PENDING_COOKIE);
    if (!pendingId) return json(reply, 403, { message: 'This browser has no sign-in in progress: open the link from your mail again.' });
    const body = request.body as { ceremonyId?: unknown; response?: unknown } | undefined;
    if (typeof body?.ceremonyId !== 'string' || typeof body.response !== 'object' || body.response === null) {
      return json(reply, 400, { message: 'The passkey was not accepted: try again.' });
    }
    const result = await magicLinks.checkPasskey(pendingId, body.ceremonyId, body.response as AuthenticationResponseJSON, request.auditContext);
    if (result.ok) {
      reply.header('set-cookie', pendingCookie('', 0));
      const completion = await complete(request, reply, result.live, ['email', 'hwk']);
      if (completion.kind === 'redirect') return json(reply, 200, { location: completion.location });
      // The Response cannot travel in a JSON answer: the session just opened answers the IdP-initiated entry instead.
      if (completion.kind === 'saml') return json(reply, 200, { location: `${new URL(opts.publicUrl).pathname.replace(/\/$/, '')}/customers/${result.live.link.customerKey}/saml/sso?app=${result.live.application.uuid}` });
      reply.header('set-cookie', `${DONE_COOKIE}=${encodeURIComponent(`${completion.kind}:${completion.applicationName}`)}; Path=/magic/done; Max-Age=60; HttpOnly; SameSite=Strict${secure}`);
      return json(reply, 200, { location: '/magic/done' });
    }
    if (result.reason === 'ended') {
      reply.header('set-cookie', pendingCookie('', 0));
      return json(reply, 410, { message: 'This sign-in has ended.', location: '/magic/code' });
    }
    return json(reply, 400, { message: `The passkey was not accepted (${attemptsLeft(result.attemptsLeft)}).` });
  });

  /** Where a passkey step that ends on our own page goes (its kind and application in a one-minute cookie). */
  app.get('/magic/done', { schema: { hide: true } }, async (request, reply) => {
    let done = '';
    try { done = decodeURIComponent(readRequestCookie(request, DONE_COOKIE) ?? ''); } catch { done = ''; }
    const colon = done.indexOf(':');
    if (colon < 0) return html(reply, 403, noSignInPage());
    reply.header('set-cookie', `${DONE_COOKIE}=; Path=/magic/done; Max-Age=0; HttpOnly; SameSite=Strict${secure}`);
    const name = done.slice(colon + 1);
    return html(reply, 200, signedInPage(name));
  });
  app.post('/magic/recovery', { schema: { hide: true } }, async (request, reply) => {
    // Only a browser whose link was used may try a recovery code: nothing to guess at without one.
    if (!readRequestCookie(request, PENDING_COOKIE)) return html(reply, 403, noSignInPage());
    if (!magicLinks.acceptsRecoveryCodes) return html(reply, 410, signInEndedPage());
    return answer(request, reply, true);
  });
}

function attemptsLeft(count: number): string {
  return count === 1 ? '1 attempt left' : `${count} attempts left`;
}

export const landingPlugin = (opts: LandingOptions) => (app: FastifyInstance) => landingRoutes(app, opts);
