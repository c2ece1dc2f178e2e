/**
 * The content site face (port 8081): health, the protection plugin over every site route, the token
 * endpoint and the JWKS document (both open), posts, API keys, and any further areas (API tokens).
 * The site is bound to one customer, which compose/site.ts resolves at start with the parts this
 * face mounts: its users are the site's users.
 */
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, preHandlerHookHandler } from 'fastify';
import { requestContext } from '../audit/context.ts';
import type { Config, SiteConfig } from '../config.ts';
import { createHttpApp } from '../http/app.ts';
import { healthRoutes } from '../http/health.ts';
import type { MetricsRegistry } from '../http/metrics.ts';
import { withErrorResponses } from '../http/openapi-errors.ts';
import type { Customer } from '../identity/customers/types.ts';
import type { Clock } from '../lib/clock.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import type { SiteApiKeysService } from './api-keys/service.ts';
import { installSiteErrors, send, siteError, toWire } from './errors.ts';
import { siteErrorResponses, tokenRequestBody } from './openapi-errors.ts';
import { postsRoutes } from './posts/routes.ts';
import type { PostsService } from './posts/service.ts';
import type { SiteProtectionOptions } from './protect/authenticator.ts';
import type { SiteJwtKeys } from './protect/jwt-keys.ts';
import { siteProtection } from './protect/plugin.ts';
import type { Capabilities, SiteUser } from './protect/principal.ts';
import type { EffectiveSiteConfig } from './settings/service.ts';
import { TOKEN_PATH, tokenRoutes } from './token/routes.ts';
import type { TokenService } from './token/service.ts';

export const JWKS_PATH = '/.well-known/jwks.json';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What an area (API tokens, …) and the API-token verifier get: the customer served and its per-request checks. */
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

/**
 * An area: a group of routes mounted inside the protected scope (every route requires a credential
 * unless it opts out), as the admin API's areas are mounted inside its signed scope.
 */
export type SiteArea = (app: FastifyInstance, site: SiteContext) => Promise<void>;

/** What the site mounts, built by compose/site.ts for the customer it serves. */
export interface SiteParts {
  /** The effective site settings (environment, then CLI settings). */
  settings: SiteConfig;
  /** The settings the CLI set (logged at start). */
  fromCli: EffectiveSiteConfig['fromCli'];
  context: SiteContext;
  /** The protection plugin's options: the methods in force, their verifiers, the user lookups. */
  protection: SiteProtectionOptions;
  /** The JWT keys, for the JWKS document. */
  keys: SiteJwtKeys;
  /** The provider method is enabled but no provider is configured (logged at start). */
  providerMissing: boolean;
  tokens: TokenService;
  posts: PostsService;
  apiKeys: SiteApiKeysService;
  /** Further route areas mounted in the protected scope (the API-token routes). */
  areas: SiteArea[];
}

export interface SiteAppOptions {
  /** Its log level, trust of proxies and site URL. */
  config: Config;
  ping: () => Promise<void>;
  /** The parts to mount, or why the site cannot serve (it then answers 503 with the reason). */
  parts: SiteParts | { unavailable: string };
  logStream?: { write(line: string): void };
  /** Where the site counts its requests (the management interface serves them). */
  metrics?: MetricsRegistry;
  /** Installs the per-address rate limits (http/rate-limit.ts) before any route. */
  rateLimits?: (app: FastifyInstance) => Promise<void>;
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
    // error responses it can give (openapi-errors.ts); the token endpoint its three body forms.
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
  if ('unavailable' in opts.parts) return buildUnavailableSite(opts, opts.parts.unavailable);
  const { settings: site, fromCli, context, protection, keys, tokens, posts, apiKeys, areas } = opts.parts;
  const { clock } = context;
  const customerId = context.customer.id;
  const siteUrl = opts.config.siteUrl;

  const app = createHttpApp({ logLevel: opts.config.logLevel, logStream: opts.logStream, trustProxy: opts.config.trustProxy, renderError: toWire });
  // First, so the counting hook reaches every route registered after it.
  opts.metrics?.instrument(app, 'site');
  installSiteErrors(app);
  await opts.rateLimits?.(app);
  await app.register(swagger, siteOpenApi(siteUrl));
  if (opts.parts.providerMissing) app.log.info('site: the provider method is enabled but no provider is configured; provider tokens are refused');
  app.log.info({ customerId, methods: protection.methods, jwtAlg: site.jwtAlg, fromCli }, 'site: bound to customer');

  await app.register(healthRoutes, { ping: opts.ping });

  await app.register(async (scope) => {
    await scope.register(siteProtection, protection);
    // The site's writes (API keys, API tokens) are recorded as the calling user; the default key and
    // the token endpoint act as the system. Reads record nothing, so only routes that write get the context.
    const withAuditContext: preHandlerHookHandler = (request, _reply, done) => {
      const userId = request.principal?.userId;
      request.auditContext = requestContext(request, userId === null || userId === undefined ? undefined : { type: 'user', id: String(userId) });
      done();
    };
    scope.addHook('onRoute', (route) => {
      if ([route.method].flat().every((method) => READ_METHODS.has(method))) return;
      route.preHandler = [withAuditContext, ...[route.preHandler ?? []].flat()];
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
    for (const area of areas) await scope.register(async (child) => area(child, context));
  });
  return app;
}
