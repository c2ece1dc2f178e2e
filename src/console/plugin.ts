/**
 * The admin console at {public URL}/console: server-rendered pages, a session cookie backed by the
 * console_sessions table, a CSRF token on every write (bound to the session), a strict CSP and
 * no-store on every page. Registered on the identity face through compose.ts.
 */
import { createHmac } from 'node:crypto';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { SiteConfig } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { logServerError } from '../http/app.ts';
import { asServiceUnavailable, Conflict, Invalid, LatchkeyError, NotFound, RateLimited } from '../lib/errors.ts';
import type { Sealer } from '../lib/seal.ts';
import type { Database } from '../store/schema.ts';
import { CSRF_COOKIE, SESSION_COOKIE, clearSessionCookie } from './cookies.ts';
import { csrfUserInfo, pageContext, sendPage, type ConsoleContext, type ConsoleServices } from './context.ts';
import { html } from './html.ts';
import { plainPage } from './layout.ts';
import { createConsoleOwnersService, type ConsoleOwnersService } from './owners/service.ts';
import { accountRoutes } from './pages/account.ts';
import { applicationRoutes } from './pages/applications.ts';
import { groupRoutes } from './pages/groups.ts';
import { oauthClientRoutes } from './pages/oauth-clients.ts';
import { signInRoutes } from './pages/sign-in.ts';
import { siteRoutes } from './pages/site.ts';
import { userRoutes } from './pages/users.ts';
import { createConsoleSessionsService, type ConsoleSessionsService, type SessionTimes } from './sessions/service.ts';
import { CONSOLE_CSS } from './styles.ts';

export interface ConsolePluginOptions {
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  /** Derives the cookie-signing and CSRF keys, the same on every node. */
  masterKey: Buffer;
  /** LATCHKEY_PUBLIC_URL: its path prefixes every link; https makes the cookies Secure. */
  publicUrl: string;
  services: ConsoleServices;
  /** The environment's content-site settings (the Site page applies the stored ones over them). */
  siteConfig?: SiteConfig;
  sessionTimes?: Partial<SessionTimes>;
  owners?: ConsoleOwnersService;
}

const PAGE_HEADERS = {
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

const derive = (masterKey: Buffer, label: string) => createHmac('sha256', masterKey).update(`latchkey-console:${label}`).digest();

/** The owner's sessions and credentials, for the CLI (set-password ends every console session). */
export function createConsoleAccounts(deps: { db: Kysely<Database>; clock: Clock; sealer: Sealer }): { owners: ConsoleOwnersService; sessions: ConsoleSessionsService } {
  return { owners: createConsoleOwnersService(deps), sessions: createConsoleSessionsService(deps) };
}

export function consolePlugin(opts: ConsolePluginOptions) {
  // Its own context under /console: the plugins, hooks and handlers below stay inside it.
  return async (face: FastifyInstance): Promise<void> => { await face.register(consoleRoutes(opts), { prefix: '/console' }); };
}

function consoleRoutes(opts: ConsolePluginOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    // Pages for people, not API operations: kept out of the OpenAPI document (and so the client).
    app.addHook('onRoute', (route) => { route.schema = { ...route.schema, hide: true }; });
    const url = new URL(opts.publicUrl);
    const ctx: ConsoleContext = {
      services: opts.services,
      owners: opts.owners ?? createConsoleOwnersService(opts),
      sessions: createConsoleSessionsService({ db: opts.db, clock: opts.clock, times: opts.sessionTimes }),
      db: opts.db,
      clock: opts.clock,
      root: `${url.pathname.replace(/\/+$/, '')}/console`,
    };
    const secure = url.protocol === 'https:';

    await app.register(cookie, { secret: derive(opts.masterKey, 'cookie').toString('base64url') });
    await app.register(csrf, {
      cookieKey: CSRF_COOKIE,
      cookieOpts: { path: ctx.root, httpOnly: true, sameSite: 'strict', secure, signed: true },
      getUserInfo: csrfUserInfo,
      getToken: (request) => {
        const token = (request.body as Record<string, unknown> | undefined)?._csrf;
        return typeof token === 'string' ? token : undefined;
      },
      csrfOpts: { hmacKey: derive(opts.masterKey, 'csrf'), userInfo: true },
    });
    await app.register(formbody);

    app.addHook('onRequest', async (request, reply) => {
      reply.headers(PAGE_HEADERS);
      if (request.routeOptions.url === '/console/console.css') return;
      const value = request.cookies[SESSION_COOKIE];
      if (!value) return;
      const session = await ctx.sessions.resolve(value);
      if (!session) {
        clearSessionCookie(reply, ctx.root, secure);
        request.consoleSession = undefined;
        (request as { consoleSessionEnded?: boolean }).consoleSessionEnded = true;
        return;
      }
      request.consoleSession = session;
      if (session.stage === 'active') request.consoleOwner = await ctx.owners.findById(session.customerId);
    });
    // Every write, the sign-in form included, carries the token of a page this session was shown.
    app.addHook('preHandler', (request, reply, done) => {
      if (request.method === 'GET' || request.method === 'HEAD') return done();
      app.csrfProtection(request, reply, done);
    });

    app.setErrorHandler((error, request, reply) => renderError(ctx, error, request, reply));
    app.setNotFoundHandler((request, reply) => sendPage(reply, 404, plainPage(pageContext(ctx, request, reply), 'Page not found',
      html`<p>There is no console page at this address.</p><p><a href="${ctx.root}">Go to the console</a></p>`)));

    app.get('/console.css', async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return reply.type('text/css; charset=utf-8').send(CONSOLE_CSS);
    });

    await app.register(signInRoutes(ctx, { secure }));
    await app.register(async (signedIn) => {
      // Pages need an active session: a reader without one goes to the sign-in form; a write is refused.
      signedIn.addHook('preHandler', async (request, reply) => {
        if (request.consoleSession?.stage === 'active' && request.consoleOwner) return;
        if (request.method === 'GET' || request.method === 'HEAD') {
          const ended = (request as { consoleSessionEnded?: boolean }).consoleSessionEnded ? '?ended=expired' : '';
          return reply.redirect(`${ctx.root}/sign-in${ended}`, 303);
        }
        return sendPage(reply, 403, plainPage(pageContext(ctx, request, reply), 'Signed out',
          html`<p role="alert">Your session has ended, so nothing was changed.</p><p><a href="${ctx.root}/sign-in">Sign in again</a></p>`));
      });
      for (const routes of [accountRoutes, userRoutes, groupRoutes, applicationRoutes, oauthClientRoutes]) {
        await signedIn.register(routes(ctx));
      }
      await signedIn.register(siteRoutes(ctx, opts.siteConfig));
    });
  };
}

function renderError(ctx: ConsoleContext, error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const code = (error as { code?: string }).code;
  const page = (status: number, title: string, text: string) => sendPage(reply, status, plainPage(pageContext(ctx, request, reply), title,
    html`<p role="alert">${text}</p><p><a href="${ctx.root}">Back to the console</a></p>`));
  if (code === 'FST_CSRF_MISSING_SECRET' || code === 'FST_CSRF_INVALID_TOKEN') {
    return page(403, 'Form refused', 'This form was not accepted: it has expired or did not come from this console. Go back, reload the page and try again.');
  }
  // The database (or Redis) is down: refused, never served unchecked; the page says when to retry.
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    logServerError(request.log, error);
    reply.header('retry-after', String(unavailable.retryAfterSeconds));
    return page(503, 'Temporarily unavailable', `The console cannot reach the data it needs right now. Try again in ${unavailable.retryAfterSeconds} seconds.`);
  }
  if (error instanceof RateLimited) {
    reply.header('retry-after', String(error.retryAfterSeconds));
    return page(429, 'Too many attempts', `Try again in ${error.retryAfterSeconds} seconds.`);
  }
  if (error instanceof NotFound) return page(404, 'Not found', `The ${error.entity} was not found; it may have been deleted.`);
  if (error instanceof Invalid || error instanceof Conflict) return page(error instanceof Invalid ? 400 : 409, 'Not saved', error.message);
  if (error instanceof LatchkeyError) return page(400, 'Not saved', error.message);
  const status = (error as { statusCode?: number }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return page(status, 'Bad request', 'The request was not understood.');
  logServerError(request.log, error);
  return page(500, 'Something went wrong', 'The console could not finish this request. Nothing secret was logged; the request id is in the logs.');
}
