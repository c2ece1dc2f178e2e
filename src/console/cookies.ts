/** The session cookie: HttpOnly, SameSite=Strict, scoped to the console, Secure behind https. */
import type { FastifyReply } from 'fastify';

export const SESSION_COOKIE = 'lk_console';
export const CSRF_COOKIE = 'lk_console_csrf';

export function setSessionCookie(reply: FastifyReply, root: string, secure: boolean, value: string): void {
  // No Max-Age: the browser forgets it when closed; the server ends it on idle and lifetime anyway.
  reply.setCookie(SESSION_COOKIE, value, { path: root, httpOnly: true, sameSite: 'strict', secure });
}

export function clearSessionCookie(reply: FastifyReply, root: string, secure: boolean): void {
  reply.clearCookie(SESSION_COOKIE, { path: root, httpOnly: true, sameSite: 'strict', secure });
}
