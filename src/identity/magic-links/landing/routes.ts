/**
 * The magic-link landing on the identity face (outside /api, no admin auth): GET /magic/<token>
 * shows a button and never uses the link (mail scanners prefetch links); POST uses it (one winner
 * among concurrent POSTs), asks for the authenticator code when the policy wants one (POST
 * /magic/code, a pending login behind an HttpOnly cookie), then signs the user in to the application.
 * The token never reaches a log line: the URL is redacted as soon as the route is known.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { logServerError } from '../../../http/app.ts';
import { asServiceUnavailable } from '../../../lib/errors.ts';
import type { LiveLink } from '../types.ts';
import type { MagicLinksService } from '../service.ts';
import { PENDING_LOGIN_MS } from '../service.ts';
import {
  badRequestPage, codePage, confirmPage, deadLinkPage, errorPage, noAuthenticatorPage, samlPage, signInEndedPage, STYLE_HASH, unavailablePage,
} from './pages.ts';

export const PENDING_COOKIE = 'lk_magic_login';

export interface LandingOptions {
  magicLinks: MagicLinksService;
  /** LATCHKEY_PUBLIC_URL: https makes the cookie Secure. */
  publicUrl: string;
  /** Opens the session at the customer's OpenID provider (OAUTH applications) before the 303. */
  beginProviderLogin(reply: FastifyReply, login: { customerId: number; userId: number; applicationUuid: string; amr: string[] }): Promise<void>;
}

/**
 * No caching, no referrer (the URL is a secret), no framing, no script. form-action names the
 * application's origins besides 'self': browsers apply it to the redirect that follows the POST.
 */
export function securityHeaders(redirectOrigins: string[] = []): Record<string, string> {
  const formAction = ["'self'", ...redirectOrigins].join(' ');
  return {
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; style-src ${STYLE_HASH}; img-src 'none'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  };
}

function html(reply: FastifyReply, status: number, body: string, redirectOrigins: string[] = []): FastifyReply {
  return reply.code(status).headers(securityHeaders(redirectOrigins)).type('text/html; charset=utf-8').send(body);
}

function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
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
    if (request.raw.url && !request.raw.url.startsWith('/magic/code')) request.raw.url = '/magic/[token]';
    reply.headers(securityHeaders());
    done();
  });

  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode;
    if ((typeof status === 'number' && status >= 400 && status < 500) || (error as { code?: string }).code === 'invalid') {
      return html(reply, typeof status === 'number' && status >= 400 && status < 500 ? status : 400, badRequestPage());
    }
    logServerError(request.log, error);
    // The database or Redis is down: refused (fail closed) and said so, with when to retry.
    const unavailable = asServiceUnavailable(error);
    if (unavailable) {
      reply.header('retry-after', String(unavailable.retryAfterSeconds));
      return html(reply, 503, unavailablePage(unavailable.retryAfterSeconds));
    }
    return html(reply, 500, errorPage());
  });

  async function finish(reply: FastifyReply, live: LiveLink, amr: string[]): Promise<FastifyReply> {
    const completion = await magicLinks.complete(live, amr);
    if (completion.kind === 'saml') return html(reply, 200, samlPage(completion.applicationName));
    if (live.application.type === 'OAUTH') {
      await opts.beginProviderLogin(reply, {
        customerId: live.link.customerId, userId: live.user.id, applicationUuid: live.application.uuid, amr,
      });
    }
    return reply.code(303).headers(securityHeaders(completion.redirectOrigins)).header('location', completion.location).send();
  }

  const tokenParams = { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } } as const;
  const schema = { hide: true, params: tokenParams };

  app.get('/magic/:token', { schema }, async (request, reply) => {
    const found = await magicLinks.inspect((request.params as { token: string }).token);
    if (found === 'dead') return html(reply, 410, deadLinkPage());
    if ('noAuthenticator' in found) return html(reply, 403, noAuthenticatorPage(found.noAuthenticator));
    // The form has no action: it posts to this same address, so the page does not repeat the token.
    return html(reply, 200, confirmPage(found.application.name, found.user.email), found.redirectOrigins);
  });

  app.post('/magic/:token', { schema }, async (request, reply) => {
    const found = await magicLinks.consume((request.params as { token: string }).token);
    if (found === 'dead') return html(reply, 410, deadLinkPage());
    if ('noAuthenticator' in found) return html(reply, 403, noAuthenticatorPage(found.noAuthenticator));
    if (found.secondFactor === 'AUTHENTICATOR_APP') {
      const pendingId = await magicLinks.startSecondFactor(found);
      reply.header('set-cookie', pendingCookie(pendingId, PENDING_LOGIN_MS / 1000));
      return html(reply, 200, codePage(found.application.name), found.redirectOrigins);
    }
    return finish(reply, found, ['email']);
  });

  app.post('/magic/code', { schema: { hide: true } }, async (request, reply) => {
    const pendingId = readCookie(request, PENDING_COOKIE) ?? '';
    const code = (request.body as { code?: unknown } | undefined)?.code;
    const result = await magicLinks.checkSecondFactor(pendingId, typeof code === 'string' ? code.trim() : '');
    if (result.ok) {
      reply.header('set-cookie', pendingCookie('', 0));
      return finish(reply, result.live, ['email', 'otp']);
    }
    if (result.reason === 'ended') {
      reply.header('set-cookie', pendingCookie('', 0));
      return html(reply, 410, signInEndedPage());
    }
    const left = result.attemptsLeft === 1 ? '1 attempt left' : `${result.attemptsLeft} attempts left`;
    const problem = result.reason === 'replayed' ? `This code has already been used: wait for the next one (${left}).`
      : `The code is incorrect (${left}).`;
    return html(reply, 400, codePage(result.applicationName, problem), result.redirectOrigins);
  });
}

export const landingPlugin = (opts: LandingOptions) => (app: FastifyInstance) => landingRoutes(app, opts);
