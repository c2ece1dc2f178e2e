/** The identity face (port 8080): admin API under /api and /moas/api, OpenAPI docs, health (metrics: src/http/management.ts). */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { requestContext } from '../audit/context.ts';
import { createHttpApp } from '../http/app.ts';
import { healthRoutes } from '../http/health.ts';
import type { MetricsRegistry } from '../http/metrics.ts';
import { withErrorResponses } from '../http/openapi-errors.ts';
import { adminApi, type AdminApiOptions } from './admin-api.ts';
import { installAdminErrors, toWire } from './errors.ts';
import { adminErrorResponses } from './openapi-errors.ts';

export interface IdentityAppOptions extends AdminApiOptions {
  logLevel: string;
  publicUrl: string;
  ping: () => Promise<void>;
  /** Where JSON log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
  trustProxy?: boolean | number | string;
  /** Where the face counts its requests (the management interface serves them). */
  metrics?: MetricsRegistry;
  /** Whole route sets outside /api (the customers' OpenID providers), each in its own context. */
  plugins?: ((app: FastifyInstance) => Promise<void>)[];
  /** Installs the per-address rate limits (http/rate-limit.ts) before any route. */
  rateLimits?: (app: FastifyInstance) => Promise<void>;
}

/**
 * The one inline style Swagger UI writes: the `<style>` of the Swagger logo in its standalone layout's top
 * bar (`.logo_small_svg__cls-2{fill:#fff}…`), allowed by hash. A new Swagger UI with other inline styles
 * shows as a refusal in test/security/browser-storage.test.ts.
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

/**
 * The API docs page's headers (SECURITY.md, V3.4.3 to V3.4.6): Swagger UI's scripts, styles and the
 * document come from this origin only (no inline script; one hashed inline style), and it is never framed.
 */
export const API_DOCS_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': `default-src 'none'; script-src 'self'; style-src 'self' ${SWAGGER_LOGO_STYLE}; img-src 'self' data:; `
    + "font-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
});

export async function buildIdentityApp(opts: IdentityAppOptions): Promise<FastifyInstance> {
  const app = createHttpApp({
    logLevel: opts.logLevel,
    logStream: opts.logStream,
    trustProxy: opts.trustProxy,
    renderError: (error) => toWire(error, 'standard'),
  });
  // First, so the counting hook reaches every route registered after it.
  opts.metrics?.instrument(app, 'identity');
  // Outside /api too (docs, health, unknown paths) errors wear the admin API's standard body.
  installAdminErrors(app);
  await opts.rateLimits?.(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Latchkey identity service',
        version: '1.0.0',
        description: 'Administrative API. Every request is signed: Authorization = lowercase hex SHA-512 of '
          + 'customerKey + Timestamp + apiKey, with the Customer-Key and Timestamp headers.',
      },
      servers: [{ url: opts.publicUrl }],
      components: {
        securitySchemes: {
          customerKey: { type: 'apiKey', in: 'header', name: 'Customer-Key' },
          timestamp: { type: 'apiKey', in: 'header', name: 'Timestamp' },
          signature: { type: 'apiKey', in: 'header', name: 'Authorization' },
          // The magic-link routes' alternative: an access token from POST /oauth/token.
          bearer: { type: 'http', scheme: 'bearer' },
          clientBasic: { type: 'http', scheme: 'basic' },
        },
      },
      security: [{ customerKey: [], timestamp: [], signature: [] }],
    },
    // /moas/api is the hosted service's path, served for existing clients: documented once, under /api.
    // Every /api operation lists the error responses of its style (openapi-errors.ts).
    transform: ({ schema, url, route }) => {
      if (url.startsWith('/moas/')) return { schema: { ...schema, hide: true }, url };
      if (!url.startsWith('/api/')) return { schema, url };
      const method = [route.method].flat()[0];
      return { schema: withErrorResponses(schema, adminErrorResponses(route.config?.adminErrors ?? 'standard', method)), url };
    },
  });
  // In a scope of its own, so the headers reach every response of the docs (page, assets, JSON) and nothing else.
  await app.register(async (docs) => {
    docs.addHook('onSend', async (_request, reply) => { reply.headers(API_DOCS_HEADERS); });
    await docs.register(swaggerUi, { routePrefix: '/api/docs' });
  });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Every request starts as the system acting from its address: the hosted pages (sign-in, landing,
  // account, reset) name the user once they know who it is (actingUser); the admin API, the console
  // and SCIM name their actor in a hook of theirs, which runs after this one.
  app.addHook('onRequest', (request, _reply, done) => {
    request.auditContext = requestContext(request);
    done();
  });

  await app.register(healthRoutes, { ping: opts.ping });
  const { authenticator, users, groups, areas, bearer } = opts;
  for (const prefix of ['/api', '/moas/api']) await app.register(adminApi, { authenticator, users, groups, areas, bearer, prefix });
  for (const plugin of opts.plugins ?? []) await app.register(plugin);
  return app;
}
