/**
 * Sign-in (e-mail and password, then the authenticator code when the owner has one) and sign-out.
 * Every refusal of a wrong credential reads the same, whichever part was wrong.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimited } from '../../lib/errors.ts';
import { field, pageContext, sendPage, type ConsoleContext } from '../context.ts';
import { html } from '../html.ts';
import { csrfField, plainPage, type Notice } from '../layout.ts';
import { clearSessionCookie, setSessionCookie } from '../cookies.ts';

const WRONG = 'Wrong e-mail or password.';
const WRONG_CODE = 'That code did not work. Enter the current code from your authenticator app.';

export function signInRoutes(ctx: ConsoleContext, cookie: { secure: boolean }) {
  return async (app: FastifyInstance): Promise<void> => {
    const passwordForm = (request: FastifyRequest, reply: FastifyReply, status: number, email: string, list?: Notice[]) => {
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, status, plainPage(page, 'Sign in', html`
<form method="post" action="${ctx.root}/sign-in">
${csrfField(page)}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${email}" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p><a href="${ctx.root}/sign-in/passkey">Sign in with a passkey</a></p>`, list));
    };
    const codeForm = (request: FastifyRequest, reply: FastifyReply, status: number, list?: Notice[]) => {
      const page = pageContext(ctx, request, reply);
      return sendPage(reply, status, plainPage(page, 'Sign in', html`
<p>Enter the 6-digit code your authenticator app shows for the Latchkey console.</p>
<form method="post" action="${ctx.root}/sign-in/code">
${csrfField(page)}
<label for="code">Authenticator code</label>
<input id="code" name="code" type="text" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p><a href="${ctx.root}/sign-in?restart=1">Start again</a></p>`, list));
    };
    const tooMany = (request: FastifyRequest, reply: FastifyReply, error: RateLimited, email = '') => {
      reply.header('retry-after', String(error.retryAfterSeconds));
      return passwordForm(request, reply, 429, email, [{ kind: 'error', text: `Too many attempts. Try again in ${error.retryAfterSeconds} seconds.` }]);
    };

    app.get('/', async (request, reply) => reply.redirect(`${ctx.root}/${request.consoleSession?.stage === 'active' ? 'account' : 'sign-in'}`, 303));

    app.get('/sign-in', async (request, reply) => {
      const session = request.consoleSession;
      if (session?.stage === 'active') return reply.redirect(`${ctx.root}/account`, 303);
      if (session?.stage === 'code') {
        if (request.query && (request.query as Record<string, unknown>).restart !== undefined) {
          await ctx.sessions.end(session);
          request.consoleSession = undefined;
          clearSessionCookie(reply, ctx.root, cookie.secure);
        } else {
          return codeForm(request, reply, 200);
        }
      }
      const reason = (request.query as Record<string, unknown> | undefined)?.ended;
      const list: Notice[] | undefined = reason === 'expired' ? [{ kind: 'error', text: 'Your session ended. Sign in again.' }]
        : reason === 'out' ? [{ kind: 'notice', text: 'You are signed out.' }] : undefined;
      return passwordForm(request, reply, 200, '', list);
    });

    app.post('/sign-in', async (request, reply) => {
      const email = field(request.body, 'email');
      const password = (request.body as Record<string, unknown> | undefined)?.password;
      if (!email || typeof password !== 'string' || !password) {
        return passwordForm(request, reply, 400, email, [{ kind: 'error', text: 'Enter your e-mail and password.' }]);
      }
      let result;
      try {
        result = await ctx.owners.checkPassword(email, password, request.ip);
      } catch (error) {
        if (error instanceof RateLimited) return tooMany(request, reply, error, email);
        throw error;
      }
      if (result.outcome === 'wrong') return passwordForm(request, reply, 401, email, [{ kind: 'error', text: WRONG }]);
      if (request.consoleSession) await ctx.sessions.end(request.consoleSession);
      const value = await ctx.sessions.create(result.owner.customerId, result.outcome === 'code-due' ? 'code' : 'active');
      setSessionCookie(reply, ctx.root, cookie.secure, value);
      return reply.redirect(`${ctx.root}/${result.outcome === 'code-due' ? 'sign-in' : 'account'}`, 303);
    });

    app.post('/sign-in/code', async (request, reply) => {
      const session = request.consoleSession;
      if (session?.stage !== 'code') return reply.redirect(`${ctx.root}/sign-in`, 303);
      const code = field(request.body, 'code');
      let reservation;
      try {
        reservation = await ctx.owners.reserveCode(session.customerId, request.ip);
      } catch (error) {
        if (error instanceof RateLimited) {
          reply.header('retry-after', String(error.retryAfterSeconds));
          return codeForm(request, reply, 429, [{ kind: 'error', text: `Too many attempts. Try again in ${error.retryAfterSeconds} seconds.` }]);
        }
        throw error;
      }
      try {
        if (!await ctx.sessions.reserveCodeAttempt(session)) {
          await reservation.release();
          await ctx.sessions.end(session);
          clearSessionCookie(reply, ctx.root, cookie.secure);
          request.consoleSession = undefined;
          return passwordForm(request, reply, 401, '', [{ kind: 'error', text: 'Too many wrong codes. Sign in again.' }]);
        }
        if (!await ctx.owners.checkCode(session.customerId, code)) {
          await reservation.failed();
          return codeForm(request, reply, 401, [{ kind: 'error', text: WRONG_CODE }]);
        }
        await reservation.succeeded();
      } catch (error) {
        await reservation.release();
        throw error;
      }
      const value = await ctx.sessions.promote(session);
      if (!value) return reply.redirect(`${ctx.root}/sign-in`, 303);
      setSessionCookie(reply, ctx.root, cookie.secure, value);
      return reply.redirect(`${ctx.root}/account`, 303);
    });

    app.post('/sign-out', async (request, reply) => {
      if (request.consoleSession) await ctx.sessions.end(request.consoleSession);
      clearSessionCookie(reply, ctx.root, cookie.secure);
      return reply.redirect(`${ctx.root}/sign-in?ended=out`, 303);
    });
  };
}
