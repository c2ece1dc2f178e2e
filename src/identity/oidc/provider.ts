/**
 * One customer's OpenID provider: panva's oidc-provider configured for the magic-link flow. Clients
 * are the customer's OAUTH applications (client_id = applicationUuid, the recomputed client secret,
 * client_secret_basic); authorization code with PKCE (S256) only; scopes openid, email, profile;
 * signed with the customer's signing key; state in the database (adapter.ts); no login form: the
 * interaction is satisfied by a login ticket from the magic-link landing (interaction.ts).
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
// @ts-expect-error TS7016: oidc-provider@8 ships no type declarations; the types below cover the part used here.
import * as untyped from 'oidc-provider';

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
}

/** The part of Koa's context used here. */
interface KoaContext { type: string; body: unknown; status: number; set(name: string, value: string): void }

interface PolicyContext { oidc: { session: { accountId?: string }; account?: unknown } }
type Check = unknown;

const { Provider, errors, interactionPolicy } = untyped as {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
  errors: { InvalidGrant: new (description: string) => Error };
  interactionPolicy: {
    base(): { get(name: string): { checks: Check[] } };
    Check: (new (reason: string, description: string, error: string, check: (ctx: PolicyContext) => boolean) => Check) & { REQUEST_PROMPT: boolean; NO_NEED_TO_PROMPT: boolean };
  };
};

/**
 * oidc-provider's default prompts, plus: a session whose account is gone (user disabled or deleted
 * since) asks for a login again, i.e. a new magic link. By default such a session fails the request.
 */
function interactionPolicyWithAccountCheck() {
  const { base, Check } = interactionPolicy;
  const policy = base();
  policy.get('login').checks.push(new Check('account_unavailable', 'the signed-in account is no longer available', 'login_required',
    (ctx) => (ctx.oidc.session.accountId && !ctx.oidc.account ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT)));
  return policy;
}

export const SCOPES = ['openid', 'email', 'profile'];

/** Lifetimes in seconds. The session is a browser-session cookie (remember: false) and short. */
const TTL = {
  AuthorizationCode: 60,
  IdToken: 300,
  AccessToken: 600,
  Interaction: 600,
  Session: 3600,
  Grant: 3600,
};

export interface ProviderDeps {
  db: Kysely<Database>;
  masterKey: Buffer;
  users: UsersService;
  applications: ApplicationsService;
  signingKeys: SigningKeysService;
}

/** Cookie signing keys, the same on every node (derived from the master key), different per customer. */
export function cookieKey(masterKey: Buffer, customerId: number): string {
  return createHmac('sha256', masterKey).update(`latchkey oidc cookies ${customerId}`).digest('base64url');
}

/** Requests whose error was the database being down (marked by the server_error listener). */
const unavailableRequests = new WeakMap<object, ServiceUnavailable>();

export async function createCustomerProvider(deps: ProviderDeps, customer: { id: number; issuer: string }): Promise<OidcProvider> {
  const { db, users, applications, signingKeys } = deps;
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
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    };
  }

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
      rpInitiatedLogout: { enabled: false },
      userinfo: { enabled: true },
    },
    interactions: {
      policy: interactionPolicyWithAccountCheck(),
      url: async (_ctx: unknown, interaction: { uid: string }) => `${issuerPath}/interaction/${interaction.uid}`,
    },
    cookies: {
      keys: [cookieKey(deps.masterKey, customerId)],
      // SameSite=Lax, not oidc-provider's default None: see DESIGN.md (magic links). Scoped to this issuer.
      long: { ...cookieOptions, path: `${issuerPath}/` },
      short: cookieOptions,
    },
    ttl: TTL,
    async renderError(ctx: KoaContext, out: { error: string; error_description?: string }, error: unknown) {
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
    },
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
    const unavailable = unavailableRequests.get(ctx);
    if (!unavailable || ctx.status !== 500) return;
    ctx.status = 503;
    ctx.set('retry-after', String(unavailable.retryAfterSeconds));
    ctx.body = unavailableBody(unavailable.message);
  });
  return provider;
}
