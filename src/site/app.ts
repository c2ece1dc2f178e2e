/**
 * The content site face (port 8081): health, the protection plugin over every site route, the token
 * endpoint and the JWKS document (both open), posts, API keys, and any further areas (API tokens).
 * The site is bound to one customer, resolved here at start: its users are the site's users.
 */
import { readFile } from 'node:fs/promises';
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config, SiteConfig, SiteMethod } from '../config.ts';
import { createHttpApp } from '../http/app.ts';
import { healthRoutes } from '../http/health.ts';
import type { MetricsRegistry } from '../http/metrics.ts';
import { siteErrorResponses, tokenRequestBody, withErrorResponses } from '../http/openapi-errors.ts';
import type { Customer } from '../identity/customers/types.ts';
import type { User } from '../identity/users/types.ts';
import type { Clock } from '../lib/clock.ts';
import type { Database } from '../store/schema.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import type { SiteApiKeysService } from './api-keys/service.ts';
import { installSiteErrors, send, siteError, toWire } from './errors.ts';
import { postsRoutes } from './posts/routes.ts';
import { createPostsService } from './posts/service.ts';
import { createCapabilityResolver } from './protect/capabilities.ts';
import { loadSiteJwtKeys } from './protect/jwt-keys.ts';
import { cacheVerifiedJwts } from './protect/jwt-cache.ts';
import { createJwtIssuer, createJwtVerifier } from './protect/jwt.ts';
import { siteProtection } from './protect/plugin.ts';
import type { ApiTokenVerifier, Capabilities, SiteUser } from './protect/principal.ts';
import { createProviderVerifier, type ProviderVerifier } from './protect/provider-token.ts';
import type { SiteSettingsService } from './settings/service.ts';
import { TOKEN_PATH, tokenRoutes } from './token/routes.ts';
import { createTokenService } from './token/service.ts';
import { createLoginThrottle } from './token/throttle.ts';
import type { ChangeFeed } from '../store/changes.ts';
import type { ThrottleStore } from '../store/throttles/types.ts';
import { prepareSiteUserLookup } from './users.ts';

export const JWKS_PATH = '/.well-known/jwks.json';

/** What an extra area (API tokens, …) gets to build its routes and verifiers with. */
export interface SiteContext {
  /** The effective site settings (environment, then CLI settings). */
  config: SiteConfig;
  /** The customer the site is bound to. */
  customer: Customer;
  clock: Clock;
  /** The bound customer's id (async to fit verifiers that resolve it lazily). */
  siteCustomerId(): Promise<number>;
  /** A site user as they are now (for per-request checks). */
  findUserById(userId: number): Promise<SiteUser | undefined>;
  /** What a user of `customerId` may do on the site (two queries: the user, their groups). */
  capabilities(customerId: number, userId: number): Promise<Capabilities>;
}

/** Mounts more routes inside the protected scope (every route requires a credential unless it opts out). */
export type SiteArea = (app: FastifyInstance, site: SiteContext) => Promise<void>;

export interface SiteAppOptions {
  config: Config;
  clock: Clock;
  db: Kysely<Database>;
  /** Undefined: the per-request user check reads the database every time (LATCHKEY_READ_CACHE=false). */
  changes: ChangeFeed | undefined;
  ping: () => Promise<void>;
  /** HS256 derives its secret from it. */
  masterKey: Buffer;
  customers: { findByKey(customerKey: string): Promise<Customer | undefined>; list(limit?: number): Promise<Customer[]> };
  users: {
    findById(customerId: number, userId: number): Promise<User | undefined>;
    findByLogin(customerId: number, login: string): Promise<User | undefined>;
    verifyCredentials(customerId: number, login: string, password: string): Promise<User | undefined>;
  };
  groups: { groupNamesByUser(db: Kysely<Database>, customerId: number, userIds: number[]): Promise<Map<number, string[]>> };
  /** The identity service's authenticator-app check for logins, when present. */
  mfa?: { checkLoginOtp(customerId: number, userId: number, otp: string | undefined): Promise<void> };
  apiKeys: SiteApiKeysService;
  settings: SiteSettingsService;
  /** Overrides config.site.customerKey (tests bind the site to their own customer). */
  customerKey?: string;
  /** The API-token verifier, built once the site's customer is known. */
  apiTokens?: (site: SiteContext) => ApiTokenVerifier;
  /** Further route areas mounted in the protected scope. */
  areas?: SiteArea[];
  logStream?: { write(line: string): void };
  /** Where the site counts its requests (the management interface serves them). */
  metrics?: MetricsRegistry;
  /** fetch used to reach the third-party provider (tests). */
  providerFetch?: typeof fetch;
  /** Installs the per-address rate limits (http/rate-limit.ts) before any route. */
  rateLimits?: (app: FastifyInstance) => Promise<void>;
  /** Where the login throttle counts (compose.ts: Redis when configured); default: the database. */
  throttles?: ThrottleStore;
}

/** What the server, CLI and tests may change when building the site from a composition. */
export type SiteAppOverrides = Partial<Pick<SiteAppOptions, 'customerKey' | 'apiTokens' | 'areas' | 'logStream' | 'providerFetch' | 'config'>>;

export function toSiteUser(user: User): SiteUser {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    role: user.role.toUpperCase(),
    isActive: !user.isDisabled && !user.markForDeletion,
    credentialsVersion: user.credentialsVersion,
  };
}

/** The site cannot tell which customer it serves; the message says what to configure. */
export class SiteCustomerUnresolved extends Error {}

/** Where the site records the customer it bound itself to (the site settings). */
export interface SiteBinding {
  boundCustomerKey(): Promise<string | undefined>;
  bindCustomer(customerKey: string): Promise<string>;
}

/**
 * The customer the site serves: the configured key; else the one recorded when the site first
 * started with a single customer; else the only customer, which is then recorded, so that a second
 * customer created later does not change what the site serves.
 * @throws SiteCustomerUnresolved when the configured or recorded key names no customer, or when
 *   there is no customer or several and none is configured or recorded.
 */
export async function resolveSiteCustomer(
  customers: SiteAppOptions['customers'],
  customerKey: string | undefined,
  binding?: SiteBinding,
): Promise<Customer> {
  if (customerKey) {
    const configured = await customers.findByKey(customerKey);
    if (configured) return configured;
    throw new SiteCustomerUnresolved(`LATCHKEY_SITE_CUSTOMER_KEY=${customerKey} names no customer: create it or fix the key`);
  }
  const recorded = await binding?.boundCustomerKey();
  if (recorded) {
    const bound = await customers.findByKey(recorded);
    if (bound) return bound;
    throw new SiteCustomerUnresolved(`the content site is bound to customer key ${recorded}, which names no customer: set LATCHKEY_SITE_CUSTOMER_KEY`);
  }
  const existing = await customers.list(2);
  if (existing.length === 0) throw new SiteCustomerUnresolved('the content site needs a customer: create one with `latchkey customer create --email E`');
  if (existing.length > 1) throw new SiteCustomerUnresolved('several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves');
  const only = existing[0];
  if (!binding) return only;
  // Two nodes starting together: the first recorded wins and both serve it.
  const winner = await binding.bindCustomer(only.customerKey);
  return winner === only.customerKey ? only : resolveSiteCustomer(customers, undefined, binding);
}

/** Sites started without a customer to serve, and why (management /readyz reads it). */
const unavailableSites = new WeakMap<FastifyInstance, string>();

/** Why `site` cannot serve (it answers 503 to every route but /healthz), or undefined when it can. */
export function siteNotReady(site: FastifyInstance): string | undefined {
  return unavailableSites.get(site);
}

/**
 * A site that answers every route with 503 and the reason, in the site error shape: the port keeps
 * answering (a load balancer sees it unready, a client reads why) while the operator fixes the
 * binding, and the identity face keeps running.
 */
async function buildUnavailableSite(opts: SiteAppOptions, reason: string): Promise<FastifyInstance> {
  const app = createHttpApp({ logLevel: opts.config.logLevel, logStream: opts.logStream, trustProxy: opts.config.trustProxy, renderError: toWire });
  unavailableSites.set(app, reason);
  opts.metrics?.instrument(app, 'site');
  installSiteErrors(app);
  app.log.error({ reason }, `content site not serving: ${reason}`);
  await app.register(healthRoutes, { ping: opts.ping, notReady: () => reason });
  // Every other path, existing or not: the site cannot tell which routes it would have.
  app.all('*', async (_request, reply) => send(reply, siteError(503, 'SERVICE_UNAVAILABLE', reason)));
  return app;
}

/** True when the provider settings name a way to check tokens. */
export function isProviderConfigured(provider: SiteConfig['provider']): boolean {
  return Boolean(provider.issuer || provider.introspectionUrl || provider.userinfoUrl);
}

/** The site's OpenAPI 3.1 document: every credential method as a security scheme. */
function siteOpenApi(siteUrl: string): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Latchkey content site',
        version: '1.0.0',
        description: 'A small CMS REST API. Every route except the token endpoint and the JWKS document needs one '
          + 'credential: an issued JWT, a third-party provider token, an API key, or an API token.',
      },
      servers: [{ url: siteUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An issued JWT, an API key, or a Bearer API token' },
          basic: { type: 'http', scheme: 'basic', description: 'username:API token (management routes also take username:password)' },
          accessToken: { type: 'apiKey', in: 'header', name: 'access_token', description: "A third-party provider's access token" },
          idToken: { type: 'apiKey', in: 'header', name: 'id_token', description: "A third-party provider's ID token" },
        },
      },
      security: [{ bearer: [] }, { basic: [] }, { accessToken: [] }, { idToken: [] }],
    },
    // Routes that opt out of the protection plugin need no credential. Every operation lists the
    // error responses it can give (http/openapi-errors.ts); the token endpoint its three body forms.
    transform: ({ schema, url, route }) => {
      const protectedRoute = (route.config as { siteAuth?: boolean } | undefined)?.siteAuth !== false;
      const method = [route.method].flat()[0];
      let documented = withErrorResponses(schema, siteErrorResponses({ method, url, protectedRoute }));
      if (!protectedRoute) documented = { ...documented, security: [] };
      if (url === TOKEN_PATH && method === 'POST') documented = { ...documented, body: tokenRequestBody() };
      return { schema: documented, url };
    },
  };
}

export async function buildSiteApp(opts: SiteAppOptions): Promise<FastifyInstance> {
  const { clock, db, users, apiKeys } = opts;
  const { config: site, fromCli } = await opts.settings.effective(opts.config.site);
  let customer: Customer;
  try {
    customer = await resolveSiteCustomer(opts.customers, opts.customerKey ?? site.customerKey, opts.settings);
  } catch (error) {
    if (!(error instanceof SiteCustomerUnresolved)) throw error;
    return buildUnavailableSite(opts, error.message);
  }
  const customerId = customer.id;
  const siteUrl = opts.config.siteUrl;

  const keys = await loadSiteJwtKeys({
    alg: site.jwtAlg,
    masterKey: opts.masterKey,
    dataDir: opts.config.dataDir,
    privateKeyPem: site.jwtPrivateKeyFile ? await readFile(site.jwtPrivateKeyFile, 'utf8') : undefined,
  });
  const jwtClaims = { keys, issuer: siteUrl, audience: `${siteUrl}/cms-json`, clock };
  const issuer = createJwtIssuer({ ...jwtClaims, ttlSeconds: site.jwtTtlSeconds });
  const jwt = cacheVerifiedJwts(createJwtVerifier(jwtClaims), { clock });

  const providerWanted = site.methods.includes('provider');
  const provider: ProviderVerifier | undefined = providerWanted && isProviderConfigured(site.provider)
    ? createProviderVerifier({ ...site.provider, clock, ...(opts.providerFetch ? { fetch: opts.providerFetch } : {}) })
    : undefined;

  const groupNamesOf = async (userId: number) => (await opts.groups.groupNamesByUser(db, customerId, [userId])).get(userId) ?? [];
  const capabilitiesOf = createCapabilityResolver({
    editorRoles: site.editorRoles,
    editorGroup: site.editorGroup,
    adminGroup: site.adminGroup,
    groupNamesOf,
  });
  const lookupUser = prepareSiteUserLookup(db, opts.changes);
  const findUserById = (userId: number) => lookupUser(customerId, userId);
  const context: SiteContext = {
    config: site,
    customer,
    clock,
    siteCustomerId: async () => customerId,
    findUserById,
    async capabilities(forCustomerId, userId) {
      const user = forCustomerId === customerId ? await users.findById(customerId, userId) : undefined;
      return user ? capabilitiesOf(toSiteUser(user)) : { canRead: false, canWrite: false, isSiteAdmin: false };
    },
  };
  const apiTokens = opts.apiTokens?.(context);
  // Provider without settings, or API tokens without a verifier: off, as if not listed.
  const methods = site.methods.filter((m: SiteMethod) => (m !== 'provider' || provider) && (m !== 'apitoken' || apiTokens));

  const app = createHttpApp({ logLevel: opts.config.logLevel, logStream: opts.logStream, trustProxy: opts.config.trustProxy, renderError: toWire });
  // First, so the counting hook reaches every route registered after it.
  opts.metrics?.instrument(app, 'site');
  installSiteErrors(app);
  await opts.rateLimits?.(app);
  await app.register(swagger, siteOpenApi(siteUrl));
  if (providerWanted && !provider) app.log.info('site: the provider method is enabled but no provider is configured; provider tokens are refused');
  app.log.info({ customerId, methods, jwtAlg: site.jwtAlg, fromCli }, 'site: bound to customer');

  await app.register(healthRoutes, { ping: opts.ping });

  const throttle = createLoginThrottle({ store: opts.throttles, db, clock, ...site.login });
  const tokens = createTokenService({ customerId, users, mfa: opts.mfa, issuer, throttle });
  const posts = createPostsService({ db, clock });

  await app.register(async (scope) => {
    await scope.register(siteProtection, {
      methods,
      jwtHeader: site.jwtHeader,
      apiKeyHeader: site.apiKeyHeader,
      jwt,
      provider,
      apiKeys: apiKeys.verifier(customerId),
      apiTokens,
      findUserById,
      findUserByLogin: async (login) => {
        const user = await users.findByLogin(customerId, login);
        return user && toSiteUser(user);
      },
      capabilitiesOf,
    });

    // Protected like every site route but the token endpoint and the JWKS: any credential reads it.
    scope.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    scope.get(JWKS_PATH, {
      config: { siteAuth: false },
      schema: { response: { 200: { type: 'object', properties: { keys: { type: 'array', items: { type: 'object', additionalProperties: true } } } } } },
    }, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return keys.jwks();
    });
    await scope.register(tokenRoutes, { tokens });
    await scope.register(postsRoutes, { posts, siteUrl, clock, cacheMs: site.postsCacheMs });
    await scope.register(apiKeyRoutes, { apiKeys, customerId, clock });
    for (const area of opts.areas ?? []) await scope.register(async (child) => area(child, context));
  });
  return app;
}
