/**
 * The admin console at {public URL}/console: server-rendered pages, a session cookie backed by the
 * console_sessions table, a CSRF token on every write (bound to the session), a strict CSP and
 * no-store on every page. Mounted on the identity face by compose/identity.ts, which builds the
 * services, the owners' accounts and their sessions it is handed: the console builds nothing.
 */
import { createHmac } from 'node:crypto';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { requestContext } from '../audit/context.ts';
import type { SiteConfig } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { createSealer } from '../lib/seal.ts';
import { installPartErrors } from '../identity/errors.ts';
import { CSRF_COOKIE, SESSION_COOKIE, clearSessionCookie } from './cookies.ts';
import { csrfUserInfo, pageContext, sendPage, type ConsoleContext, type ConsoleServices } from './context.ts';
import { html } from './html.ts';
import { plainPage } from './layout.ts';
import { firstSignInRoutes } from './first-sign-in/routes.ts';
import type { ConsoleFirstSignInService } from './first-sign-in/service.ts';
import type { ConsoleOwnersService } from './owners/service.ts';
import type { OwnerPasskeysService } from './owners/passkeys.ts';
import { accountRoutes } from './pages/account.ts';
import { accountPasskeyRoutes } from './pages/account-passkeys.ts';
import { signInPasskeyRoutes } from './pages/sign-in-passkey.ts';
import { auditRoutes } from './pages/audit.ts';
import { applicationRoutes } from './pages/applications.ts';
import { groupRoutes } from './pages/groups.ts';
import { oauthClientRoutes } from './pages/oauth-clients.ts';
import { webhookRoutes } from './pages/webhooks.ts';
import { scimRoutes } from './pages/scim.ts';
import { signInRoutes } from './pages/sign-in.ts';
import { siteRoutes } from './pages/site.ts';
import { userRoutes } from './pages/users.ts';
import type { ConsoleSessionsService } from './sessions/service.ts';
import { CONSOLE_CSS } from './styles.ts';
import { PAGE_HEADERS } from './headers.ts';

export interface ConsolePluginOptions {
  clock: Clock;
  /** Derives the cookie-signing and CSRF keys, the same on every node. */
  masterKey: Buffer;
  /** LATCHKEY_PUBLIC_URL: its path prefixes every link; https makes the cookies Secure. */
  publicUrl: string;
  services: ConsoleServices;
  /** The environment's content-site settings (the Site page applies the stored ones over them). */
  siteConfig?: SiteConfig;
  /** The owners' credentials (sign-in, password, authenticator app). */
  owners: ConsoleOwnersService;
  /** The owner's passkey sign-in. */
  ownerPasskeys: OwnerPasskeysService;
  sessions: ConsoleSessionsService;
  /** The owner's one-time sign-in links (`/console/first-sign-in/<token>`). */
  firstSignIn: ConsoleFirstSignInService;
}


const derive = (masterKey: Buffer, label: string) => createHmac('sha256', masterKey).update(`latchkey-console:${label}`).digest();

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
      owners: opts.owners,
      ownerPasskeys: opts.ownerPasskeys,
      sessions: opts.sessions,
      clock: opts.clock,
      root: `${url.pathname.replace(/\/+$/, '')}/console`,
      publicUrl: opts.publicUrl,
      flashSealer: createSealer(derive(opts.masterKey, 'flash')),
      secureCookies: url.protocol === 'https:',
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

    // The console's row of the identity face's table (identity/errors.ts), in the console's page.
    installPartErrors(app, 'console', (request, reply) => ({
      page: (title, text) => plainPage(pageContext(ctx, request, reply), title,
        html`<p role="alert">${text}</p><p><a href="${ctx.root}">Back to the console</a></p>`),
    }));
    app.setNotFoundHandler((request, reply) => sendPage(reply, 404, plainPage(pageContext(ctx, request, reply), 'Page not found',
      html`<p>There is no console page at this address.</p><p><a href="${ctx.root}">Go to the console</a></p>`)));

    app.get('/console.css', async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return reply.type('text/css; charset=utf-8').send(CONSOLE_CSS);
    });

    await app.register(signInRoutes(ctx, { secure }));
    await app.register(signInPasskeyRoutes(ctx, { secure }));
    await app.register(firstSignInRoutes(ctx, opts.firstSignIn, { secure }));
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
      // Who acts, for the audit log: the signed-in owner.
      signedIn.addHook('preHandler', (request, _reply, done) => {
        request.auditContext = requestContext(request, { type: 'console', id: request.consoleOwner!.email });
        done();
      });
      for (const routes of [accountRoutes, accountPasskeyRoutes, userRoutes, groupRoutes, applicationRoutes, oauthClientRoutes, auditRoutes, webhookRoutes, scimRoutes]) {
        await signedIn.register(routes(ctx));
      }
      await signedIn.register(siteRoutes(ctx, opts.siteConfig));
    });
  };
}
