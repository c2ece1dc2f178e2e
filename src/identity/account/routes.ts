/**
 * `<issuer>/account`: the signed-in user's own page (DESIGN.md, "Passkeys and the account page"),
 * signed in with the customer's SSO session (cookie lk_sso): who is signed in, `Change password`, the
 * authenticator app and passkeys (factor-routes.ts), the recovery codes (`Generate new codes`),
 * `Sign out` (a form posting to `<issuer>/logout`) and `Sign out everywhere`. Registered in the
 * identity face under /customers/:customerKey/account: static segments, which Fastify prefers to the
 * OpenID provider's wildcard route.
 *
 * POSTs need the session and are refused when the browser says they came from another site
 * (hosted-pages/requests.ts, the same check as the sign-out's).
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { installPartErrors } from '../errors.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import { readRequestCookie } from '../hosted-pages/requests.ts';
import { Invalid } from '../../lib/errors.ts';
import type { OidcService } from '../oidc/service.ts';
import type { PasskeysService } from '../passkeys/service.ts';
import type { RecoveryCodesService } from '../recovery-codes/service.ts';
import type { AccountService } from './service.ts';
import type { AccountFactorsService } from './factors.ts';
import { SSO_COOKIE, type SsoSessionsService } from '../sso-sessions/service.ts';
import { displayName, html, makeSignedIn, schema, text, type Found, type Params } from './context.ts';
import { factorRoutes } from './factor-routes.ts';
import { accountPage, type PasswordErrors, newCodesPage, signedOutEverywherePage } from './pages.ts';

export interface AccountOptions {
  oidc: Pick<OidcService, 'providerFor'>;
  ssoSessions: Pick<SsoSessionsService, 'current' | 'endAllForUser' | 'cookie' | 'clearCookie'>;
  recoveryCodes: Pick<RecoveryCodesService, 'generate' | 'remaining'>;
  account: Pick<AccountService, 'changePassword' | 'stepUpWithPassword' | 'stepUpPasskeyOptions' | 'stepUpWithPasskey'>;
  factors: AccountFactorsService;
  passkeys: Pick<PasskeysService, 'registrationOptions' | 'register' | 'rename'>;
  /** LATCHKEY_PUBLIC_URL: the only origin the account page's POSTs may come from. */
  publicUrl: string;
}

export async function accountRoutes(app: FastifyInstance, opts: AccountOptions): Promise<void> {
  const { ssoSessions, recoveryCodes, account, factors } = opts;
  const signedIn = makeSignedIn({ oidc: opts.oidc, ssoSessions, publicOrigin: new URL(opts.publicUrl).origin });
  await app.register(formbody);
  // The sign-in pages' errors: a throttled password check gets their "Too many attempts" page.
  installPartErrors(app, 'sign-in');

  async function showAccount(reply: FastifyReply, status: number, { entry, signedIn: { user } }: Found, more: { passwordErrors?: PasswordErrors; notice?: string } = {}) {
    const customerId = entry.customer.id;
    const [remainingCodes, mine] = await Promise.all([recoveryCodes.remaining(customerId, user.id), factors.list(customerId, user.id)]);
    return html(reply, status, accountPage({
      issuerPath: entry.issuerPath,
      name: displayName(user),
      username: user.username,
      email: user.email,
      remainingCodes,
      hasAuthenticator: mine.hasAuthenticator,
      passkeys: mine.passkeys,
      ...more,
    }), securityHeaders([], { passkeys: true }));
  }

  await factorRoutes(app, {
    account, factors, passkeys: opts.passkeys, signedIn,
    showAccount: (reply, found, notice) => showAccount(reply, 200, found, { notice }),
    secureCookies: opts.publicUrl.startsWith('https:'),
  });

  app.get<{ Params: Params }>('/customers/:customerKey/account', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, false);
    if (!found) return reply;
    return showAccount(reply, 200, found);
  });

  app.post<{ Params: Params }>('/customers/:customerKey/account/password', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: current } = found;
    // Taken as typed (no trimming: a space is a character of a passphrase).
    const currentPassword = text(request.body, 'currentPassword');
    const newPassword = text(request.body, 'newPassword');
    const errors: PasswordErrors = {};
    if (currentPassword === '') errors.currentPassword = 'Enter your current password.';
    if (newPassword === '') errors.newPassword = 'Enter a new password.';
    if (errors.currentPassword || errors.newPassword) return showAccount(reply, 400, found, { passwordErrors: errors });
    let reopened;
    try {
      reopened = await account.changePassword(entry.customer.id, current, currentPassword, newPassword,
        { userAgent: request.headers['user-agent'], address: request.ip }, readRequestCookie(request, SSO_COOKIE)!, request.auditContext);
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      const problem = error.field === 'oldPassword'
        ? { currentPassword: 'The current password is wrong.' }
        : { newPassword: `The new password ${error.message.slice(error.field.length + 1)}.` };
      return showAccount(reply, 400, found, { passwordErrors: problem });
    }
    reply.header('set-cookie', ssoSessions.cookie(entry.issuerPath, reopened.value, reopened.session));
    return showAccount(reply, 200, found, { notice: 'Your password is changed. Every other session of your account has ended.' });
  });

  // Allowed whatever the user's policies ask: codes of a user without a second factor get past nothing.
  app.post<{ Params: Params }>('/customers/:customerKey/account/recovery-codes', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const codes = await recoveryCodes.generate(found.entry.customer.id, found.signedIn.user.id);
    return html(reply, 200, newCodesPage(found.entry.issuerPath, codes));
  });

  app.post<{ Params: Params }>('/customers/:customerKey/account/sign-out-everywhere', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: { user } } = found;
    await ssoSessions.endAllForUser(entry.customer.id, user, request.auditContext);
    // This browser's provider session too, as the sign-out does; other browsers' provider sessions
    // ask for a sign-in at their next authorization, their SSO session being gone (oidc/provider.ts).
    const providerSession = await entry.provider.Session.get({ req: request.raw, res: reply.raw });
    if (providerSession.accountId) await providerSession.destroy();
    reply.header('set-cookie', ssoSessions.clearCookie(entry.issuerPath));
    return html(reply, 200, signedOutEverywherePage());
  });
}

export const accountPlugin = (opts: AccountOptions) => (app: FastifyInstance) => accountRoutes(app, opts);
