/**
 * A refused form answered by a redirect (post/redirect/get) that still shows what was typed and each
 * error beside its field: both ride to the form's page once, in a one-minute cookie of that page's
 * path, sealed to the session (what was typed stays out of URLs, logs and the history). A reload of the
 * page then shows the form afresh and can send nothing again.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleContext } from '../../context.ts';
import type { FieldErrors } from '../../forms.ts';

const COOKIE = 'lk_console_form';
const SECONDS = 60;
// Browsers drop a cookie over 4096 bytes: beyond this, what was typed is left out (the errors still ride).
const MAX_SEALED = 3800;

export interface RefusedForm {
  typed: Record<string, string>;
  errors: FieldErrors;
}

const cookieOptions = (ctx: ConsoleContext, path: string) =>
  ({ path: `${ctx.root}${path}`, httpOnly: true, sameSite: 'strict' as const, secure: ctx.secureCookies ?? false });
const aad = (request: FastifyRequest, path: string) => `refused-form:${request.consoleSession?.idHash ?? ''}:${path}`;

/** Keeps the refused form for the page at `path` (under the console root). @returns false when it cannot (no sealer). */
export function keepRefusedForm(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply, path: string, form: RefusedForm): boolean {
  if (!ctx.flashSealer) return false;
  let sealed = ctx.flashSealer.seal(JSON.stringify(form), aad(request, path));
  if (sealed.length > MAX_SEALED) sealed = ctx.flashSealer.seal(JSON.stringify({ typed: {}, errors: form.errors }), aad(request, path));
  reply.setCookie(COOKIE, sealed, { ...cookieOptions(ctx, path), maxAge: SECONDS });
  return true;
}

/** The refused form kept for this page, once (the cookie is cleared); undefined when there is none. */
export function takeRefusedForm(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply, path: string): RefusedForm | undefined {
  const sealed = request.cookies[COOKIE];
  if (!sealed || !ctx.flashSealer) return undefined;
  reply.clearCookie(COOKIE, cookieOptions(ctx, path));
  try {
    const form = JSON.parse(ctx.flashSealer.open(sealed, aad(request, path))) as RefusedForm;
    return typeof form === 'object' && form !== null ? { typed: form.typed ?? {}, errors: form.errors ?? {} } : undefined;
  } catch {
    // Another session's, another page's or a tampered value: nothing to show.
    return undefined;
  }
}
