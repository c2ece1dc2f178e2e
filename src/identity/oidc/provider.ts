/**
 * One customer's OpenID provider: panva's oidc-provider configured for the magic-link flow. Clients
 * are the customer's OAUTH applications (client_id = applicationUuid, the recomputed client secret,
 * client_secret_basic); authorization code with PKCE (S256) only; scopes openid, email, profile;
 * signed with the customer's signing key; state in the database (adapter.ts); no login form: the
 * interaction is satisfied by a login ticket from the magic-link landing (interaction.ts).
 * RP-initiated logout at the end_session_endpoint (<issuer>/session/end): a post_logout_redirect_uri must
 * be one of the application's postLogoutRedirectUris exactly; signing out there ends the provider's
 * session and the customer's SSO session of this browser.
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { SigningKeysService } from '../signing-keys/service.ts';
import type { UsersService } from '../users/service.ts';
import { kyselyAdapterFactory, type ModelPayload } from './adapter.ts';
import { asServiceUnavailable, type ServiceUnavailable } from '../../lib/errors.ts';
import { noStorePage, unavailableBody, unavailablePage } from './pages.ts';
import { escapeHtml, securityHeaders } from '../hosted-pages/layout.ts';
import { providerSignOutPage, signedOutPage } from '../sign-out/pages.ts';
import { SSO_COOKIE, type SsoSessionsService } from '../sso-sessions/service.ts';

export interface InteractionDetails {
  uid: string;
  prompt: { name: string; details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[] } };
  params: { client_id?: string; scope?: string; [key: string]: unknown };
  grantId?: string;
}

export interface ProviderGrant {
  accountId?: string;
  clientId?: string;
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  save(): Promise<string>;
}

export interface OidcProvider {
  proxy: boolean;
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  Grant: { new (init: { accountId: string; clientId: string }): ProviderGrant; find(id: string): Promise<ProviderGrant | undefined> };
  on(event: string, listener: (...args: unknown[]) => void): void;
  /** Koa middleware around the provider's own (pre- and post-processing). */
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  /** The browser's provider session, read from its signed cookie by oidc-provider itself (a new, empty one when none). */
  Session: { get(ctx: { req: IncomingMessage; res: ServerResponse }): Promise<{ accountId?: string; destroy(): Promise<void> }> };
}

/** The part of Koa's context used here. */
interface KoaContext {
  type: string;
  body: unknown;
  status: number;
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  remove(name: string): void;
  response: { headers: Record<string, unknown> };
  cookies: { get(name: string): string | undefined };
  /** oidc-provider's part of the context (documented for pre- and post-middleware): the route's name, its parameters, its client. */
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    client?: { clientId: string; clientName?: string; postLogoutRedirectUris?: string[] };
    /** The browser's provider session; at end_session its state holds the logout's xsrf value. */
    session?: { accountId?: string; state?: { secret?: string } };
    urlFor(name: string): string;
  };
}

interface PolicyContext {
  oidc: { session: { accountId?: string }; account?: unknown; client?: { clientId: string }; result?: { login?: unknown } };
  cookies: { get(name: string, options?: { signed?: boolean }): string | undefined };
}
type Check = unknown;

/** The part of oidc-provider used here (it ships no type declarations). */
interface OidcProviderModule {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
  errors: {
    InvalidGrant: new (description: string) => Error;
    InvalidRedirectUri: new () => Error & { error: string; error_description: string; statusCode: number };
    InvalidRequest: new (description: string) => Error & { error: string; error_description: string; statusCode: number };
  };
  interactionPolicy: {
    base(): { get(name: string): { checks: Check[] } };
    Check: (new (reason: string, description: string, error: string, check: (ctx: PolicyContext) => boolean | Promise<boolean>) => Check) & { REQUEST_PROMPT: boolean; NO_NEED_TO_PROMPT: boolean };
  };
}

let oidcProviderModule: Promise<OidcProviderModule> | undefined;

/**
 * oidc-provider and Koa under it hold about 24 MiB of a node's memory: loaded when the first
 * customer's provider is built, so a node that never serves OpenID Connect never holds them.
 */
function loadOidcProvider(): Promise<OidcProviderModule> {
  // @ts-expect-error TS7016: oidc-provider@8 ships no type declarations; OidcProviderModule covers the part used here.
  return (oidcProviderModule ??= import('oidc-provider') as Promise<OidcProviderModule>);
}

/**
 * oidc-provider's default prompts, plus: a session whose account is gone (user disabled or deleted
 * since) asks for a login again. By default such a session fails the request. And the provider's own
 * session stands only while our SSO session (the `lk_sso` cookie, sso-sessions) is the same user's and
 * shows every factor the application's policy asks for: revoked, ended by a disable or a new password,
 * signed out, or short of a factor, the login prompt comes back and the interaction asks (checks may
 * be async: oidc-provider awaits each, lib/actions/authorization/interactions.js).
 */
function interactionPolicyWithAccountCheck(
  { base, Check }: OidcProviderModule['interactionPolicy'],
  loginSatisfied: ((applicationUuid: string, accountId: string, ssoValue: string | undefined) => Promise<boolean>) | undefined,
) {
  const policy = base();
  const login = policy.get('login');
  login.checks.push(new Check('account_unavailable', 'the signed-in account is no longer available', 'login_required',
    (ctx) => (ctx.oidc.session.accountId && !ctx.oidc.account ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT)));
  if (loginSatisfied) {
    login.checks.push(new Check('sso_session', 'the sign-in session has ended or does not satisfy the application\'s login policy', 'login_required',
      async (ctx) => {
        const { accountId } = ctx.oidc.session;
        // No session at all is no_session's case; a login just given by the interaction stands for this request.
        if (!accountId || ctx.oidc.result?.login || !ctx.oidc.client) return Check.NO_NEED_TO_PROMPT;
        const value = ctx.cookies.get(SSO_COOKIE, { signed: false });
        return await loginSatisfied(ctx.oidc.client.clientId, accountId, value) ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
      }));
  }
  return policy;
}

export const SCOPES = ['openid', 'email', 'profile'];

/** oidc-provider's default path of the authorization endpoint (`routes.authorization`, not changed here). */
const AUTHORIZATION_PATH = '/auth';

/**
 * RFC 6749 §3.1.2.3, OpenID Connect Core §3.1.2.1 and SECURITY.md (ASVS V10.4.1): the redirect_uri is one
 * of the registered ones character for character. oidc-provider compares parsed URLs, so
 * `https://APP.example.com/cb`, `…:443/cb`, `/x/../cb`, `/./cb`, a backslash or a TAB in the host
 * would pass as `https://app.example.com/cb`.
 */
function isRegisteredRedirectUri(registered: readonly string[], value: string): boolean {
  return registered.includes(value);
}

/** Response headers no face sends (SECURITY.md, V3.4.2): oidc-provider's CORS answers, taken off again. */
function isCorsHeader(name: string): boolean {
  return name.toLowerCase().startsWith('access-control-');
}

/** Lifetimes in seconds. The session is a browser-session cookie (remember: false) and short. */
const TTL = {
  AuthorizationCode: 60,
  IdToken: 300,
  AccessToken: 600,
  // As long as a hosted sign-in flow (15 minutes): the interaction it returns to is still there.
  Interaction: 900,
  Session: 3600,
  Grant: 3600,
};

export interface ProviderDeps {
  db: Kysely<Database>;
  masterKey: Buffer;
  users: UsersService;
  applications: ApplicationsService;
  signingKeys: SigningKeysService;
  /** Signing out at the provider ends the customer's SSO session of the browser too. */
  ssoSessions: Pick<SsoSessionsService, 'end' | 'clearCookie'>;
  /**
   * Whether the browser's SSO cookie value is a live session of this account that satisfies the
   * client's (application's) login policy for it. Absent: the provider's own session decides alone.
   */
  loginSatisfied?: (customerId: number, applicationUuid: string, accountId: string, ssoValue: string | undefined) => Promise<boolean>;
}

/** Cookie signing keys, the same on every node (derived from the master key), different per customer. */
export function cookieKey(masterKey: Buffer, customerId: number): string {
  return createHmac('sha256', masterKey).update(`latchkey oidc cookies ${customerId}`).digest('base64url');
}

/** Requests whose error was the database being down (marked by the server_error listener). */
const unavailableRequests = new WeakMap<object, ServiceUnavailable>();

export async function createCustomerProvider(deps: ProviderDeps, customer: { id: number; issuer: string }): Promise<OidcProvider> {
  const { db, users, applications, signingKeys } = deps;
  const { Provider, errors, interactionPolicy } = await loadOidcProvider();
  const customerId = customer.id;
  const issuer = new URL(customer.issuer);
  const issuerPath = issuer.pathname.replace(/\/$/, '');
  const secure = issuer.protocol === 'https:';
  const cookieOptions = { httpOnly: true, sameSite: 'lax', signed: true, secure };

  async function findClient(clientId: string): Promise<ModelPayload | undefined> {
    // Issued in lower case; anything else is not one of ours (and never a lookup by another spelling).
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(clientId)) return undefined;
    const app = await applications.findByUuid(db, customerId, clientId);
    const secret = app && applications.applicationClientSecret(app);
    if (!app || app.type !== 'OAUTH' || secret === undefined) return undefined;
    return {
      client_id: app.uuid,
      client_secret: secret,
      client_name: app.name,
      redirect_uris: app.redirectUris,
      post_logout_redirect_uris: app.postLogoutRedirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    };
  }

  async function renderError(ctx: KoaContext, out: { error: string; error_description?: string }, error: unknown) {
    ctx.type = 'html';
    // The database is down (a client, grant or session could not be read): 503, not "sign-in failed".
    const unavailable = asServiceUnavailable(error);
    if (unavailable) {
      ctx.status = 503;
      ctx.set('retry-after', String(unavailable.retryAfterSeconds));
      ctx.body = unavailablePage(unavailable.retryAfterSeconds);
      return;
    }
    ctx.body = noStorePage('Sign-in failed', [
      'The application’s sign-in request could not be completed.',
      `${out.error}${out.error_description ? `: ${out.error_description}` : ''}`,
    ]);
  }

  const rpInitiatedLogout = {
    enabled: true,
    // Our layout and headers: the form posts to the provider itself, which then sends the browser
    // to the post_logout_redirect_uri (CSP form-action covers that redirect too).
    async logoutSource(ctx: KoaContext, form: string) {
      const target = ctx.oidc?.params?.post_logout_redirect_uri;
      const origins = typeof target === 'string' && URL.canParse(target) ? [new URL(target).origin] : [];
      for (const [name, value] of Object.entries(securityHeaders(origins))) ctx.set(name, value);
      ctx.type = 'html';
      ctx.body = providerSignOutPage(form, ctx.oidc?.client?.clientName);
    },
    async postLogoutSuccessSource(ctx: KoaContext) {
      for (const [name, value] of Object.entries(securityHeaders())) ctx.set(name, value);
      ctx.type = 'html';
      ctx.body = signedOutPage();
    },
  };

  const provider = new Provider(customer.issuer, {
    adapter: kyselyAdapterFactory({ db, customerId, findClient, alreadyConsumed: errors.InvalidGrant }),
    clients: [],
    jwks: await signingKeys.privateJwks(customerId),
    async findAccount(_ctx: unknown, sub: string) {
      if (!/^[1-9][0-9]{0,15}$/.test(sub)) return undefined;
      const user = await users.findById(customerId, Number(sub));
      // A disabled (or deleted) user has no account: sessions and tokens stop resolving to one.
      if (!user || user.isDisabled) return undefined;
      const name = `${user.firstName} ${user.lastName}`.trim();
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: user.email,
          email_verified: user.emailVerified,
          preferred_username: user.username,
          ...(name ? { name } : {}),
          ...(user.firstName ? { given_name: user.firstName } : {}),
          ...(user.lastName ? { family_name: user.lastName } : {}),
        }),
      };
    },
    claims: {
      // oidc-provider's defaults (acr, auth_time, iss, sid); amr (the landing's methods: email, otp)
      // comes with openid, else the ID token would carry it only when a claims parameter asks.
      acr: null, auth_time: null, iss: null, sid: null,
      openid: ['sub', 'amr'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'given_name', 'family_name'],
    },
    // The ID token carries the scopes' claims (email, preferred_username), not only the userinfo endpoint.
    conformIdTokenClaims: false,
    scopes: SCOPES,
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic'],
    pkce: { methods: ['S256'], required: () => true },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout,
      userinfo: { enabled: true },
    },
    interactions: {
      policy: interactionPolicyWithAccountCheck(interactionPolicy, deps.loginSatisfied && ((uuid, accountId, value) => deps.loginSatisfied!(customerId, uuid, accountId, value))),
      url: async (_ctx: unknown, interaction: { uid: string }) => `${issuerPath}/interaction/${interaction.uid}`,
    },
    cookies: {
      keys: [cookieKey(deps.masterKey, customerId)],
      // SameSite=Lax, not oidc-provider's default None: see DESIGN.md (magic links). Scoped to this issuer.
      long: { ...cookieOptions, path: `${issuerPath}/` },
      short: cookieOptions,
    },
    ttl: TTL,
    renderError,
    // Exact redirect URIs (isRegisteredRedirectUri) wherever oidc-provider takes one (authorization
    // endpoint by GET or POST, pushed authorization requests): its documented extraParams validator,
    // run before any code is issued or any interaction starts. The GET pre-middleware below also keeps
    // an early error from being redirected to a URI that only parses like a registered one.
    extraParams: {
      async redirect_uri(_ctx: unknown, value: unknown, client: { redirectUris: string[] } | undefined) {
        if (typeof value === 'string' && client && !isRegisteredRedirectUri(client.redirectUris, value)) {
          throw new errors.InvalidRedirectUri();
        }
      },
    },
    // No CORS (SECURITY.md, V3.4.2): a browser request with an Origin to the token or userinfo endpoint is
    // refused (invalid_request); the headers oidc-provider still sets elsewhere are removed below.
    clientBasedCORS: () => false,
  });
  // Koa reads the scheme and host from X-Forwarded-* headers, which the mount sets from the public
  // URL (never from the client): endpoints in discovery then always match the issuer.
  provider.proxy = true;
  // The browser gets a generic server_error page; the operator gets the reason (never a token: messages only).
  // A database outage is a 503 (below), said as such: an outage to watch, not a defect.
  provider.on('server_error', (ctx, error) => {
    const unavailable = asServiceUnavailable(error);
    if (unavailable) unavailableRequests.set(ctx as object, unavailable);
    const what = unavailable ? `${unavailable.dependency} unavailable, answered 503` : 'server error';
    process.stderr.write(`latchkey: OpenID provider of customer ${customerId}: ${what}: ${(error as Error)?.message ?? error}\n`);
  });
  // oidc-provider renders every error that is not its own as a 500 server_error; its JSON answers
  // (token, userinfo, …) have no rendering hook, so a post-middleware (provider.use, documented)
  // turns the ones server_error marked above into 503 temporarily_unavailable with Retry-After.
  // renderError (HTML) has already answered 503 itself.
  provider.use(async (ctx: KoaContext, next: () => Promise<void>) => {
    await next();
    // Discovery, JWKS and preflights answer any Origin; no face sends CORS headers (SECURITY.md, V3.4.2).
    for (const name of Object.keys(ctx.response.headers)) if (isCorsHeader(name)) ctx.remove(name);
    const unavailable = unavailableRequests.get(ctx);
    if (!unavailable || ctx.status !== 500) return;
    ctx.status = 503;
    ctx.set('retry-after', String(unavailable.retryAfterSeconds));
    ctx.body = unavailableBody(unavailable.message);
  });
  // RP-initiated logout (a post-middleware, provider.use, documented):
  // - the end_session prompt: a post_logout_redirect_uri must be one of the client's registered strings
  //   exactly (oidc-provider compares parsed URLs, see isRegisteredRedirectUri). Refused after the
  //   provider answered, the prompt (and its xsrf value, without which the logout cannot be confirmed)
  //   never reaches the browser.
  // - the confirmation that ended the provider's session (its 303) ends the customer's SSO session of
  //   this browser too.
  provider.use(async (ctx: KoaContext, next: () => Promise<void>) => {
    await next();
    const route = ctx.oidc?.route;
    if (route === 'end_session') {
      const target = ctx.oidc?.params?.post_logout_redirect_uri;
      const registered = ctx.oidc?.client?.postLogoutRedirectUris ?? [];
      if (typeof target === 'string' && !isRegisteredRedirectUri(registered, target)) {
        const error = new errors.InvalidRequest('post_logout_redirect_uri not registered');
        ctx.status = error.statusCode;
        for (const [name, value] of Object.entries(securityHeaders())) ctx.set(name, value);
        await renderError(ctx, { error: error.error, error_description: error.error_description }, error);
      } else if (ctx.status === 200 && !ctx.oidc?.session?.accountId && ctx.oidc?.session?.state?.secret) {
        // Without a provider session oidc-provider submits the confirmation itself (a script): a link
        // from any site would then end the customer's SSO session. The same prompt as with one instead.
        const action = escapeHtml(ctx.oidc.urlFor('end_session_confirm'));
        const form = `<form id="op.logoutForm" method="post" action="${action}"><input type="hidden" name="xsrf" value="${escapeHtml(ctx.oidc.session.state.secret)}"/></form>`;
        await rpInitiatedLogout.logoutSource(ctx, form);
      }
    } else if (route === 'end_session_confirm' && ctx.status === 303) {
      await deps.ssoSessions.end(customerId, ctx.cookies.get(SSO_COOKIE));
      ctx.append('set-cookie', deps.ssoSessions.clearCookie(issuerPath));
    }
  });
  // A pre-middleware (provider.use, documented) in front of the authorization endpoint's GET: a
  // redirect_uri that is not one of the client's registered strings is refused before oidc-provider
  // reads the request, so that no error of an earlier check is redirected to it either (RFC 6749
  // §4.1.2.1: a mismatching redirection URI MUST NOT be redirected to). The answer is the provider's own
  // for an unregistered URI. An unknown client, a repeated or missing parameter: the provider's checks.
  provider.use(async (ctx: KoaContext, next: () => Promise<void>) => {
    // The provider's router matches paths in any case and with a trailing slash.
    if (ctx.method === 'GET' && ctx.path.toLowerCase().replace(/\/$/, '') === AUTHORIZATION_PATH) {
      const { client_id: clientId, redirect_uri: redirectUri } = ctx.query;
      if (typeof clientId === 'string' && typeof redirectUri === 'string') {
        // A lookup that fails (the database down) leaves the request to the provider, which answers its 503.
        const client = await findClient(clientId).catch(() => undefined);
        const registered = client?.redirect_uris as string[] | undefined;
        if (registered && !isRegisteredRedirectUri(registered, redirectUri)) {
          const error = new errors.InvalidRedirectUri();
          ctx.status = error.statusCode;
          ctx.set('cache-control', 'no-store');
          await renderError(ctx, { error: error.error, error_description: error.error_description }, error);
          return;
        }
      }
    }
    await next();
  });
  return provider;
}
