/**
 * The Fastify factory both faces share: request ids, JSON logs that never carry credentials,
 * strict JSON parsing (no prototype poisoning), no type coercion, and a small body limit.
 */
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions,
} from 'fastify';
import pino from 'pino';
import type { AuditContext } from '../audit/context.ts';
import { asServiceUnavailable } from '../lib/errors.ts';
import { answerClientError, discard } from './client-errors.ts';
import { installDraining } from './draining.ts';
import { installInputChecks } from './input-checks.ts';
import { buildSerializer, buildValidator } from './schema-compilers.ts';

export { checkBody, isMalformedMultipart, MAX_BODY_DEPTH, type BadInput } from './input-checks.ts';

/** A face's error body: JSON, or plain text where the spec shows text, or a page (`type` says so). */
export interface WireError {
  status: number;
  body: string | Record<string, unknown>;
  headers?: Record<string, string>;
  /** The Content-Type, when it is neither JSON nor plain text (an HTML page). */
  type?: string;
}

/** Renders an error in a face's own shape (identity/errors.ts, site/errors.ts). */
export type ErrorRenderer = (error: FastifyError) => WireError;

export interface HttpAppOptions {
  logLevel: string;
  /** Largest accepted request body, in bytes. */
  bodyLimit?: number;
  /** Where JSON log lines go (default stdout); tests pass a stream to read them. */
  logStream?: { write(line: string): void };
  /**
   * Renders errors raised before routing (a malformed URL) and requests Node's parser refuses:
   * no hook runs for them, so the face gives its own error shape. The default is a bare 400.
   */
  renderError?: ErrorRenderer;
  /** Fastify's trustProxy: whose X-Forwarded-For to believe for the client address (throttling, logs). */
  trustProxy?: boolean | number | string;
}

/** A route as registered: the metrics labels, the OpenAPI test and the bad-input test read these. */
export interface RegisteredRoute {
  method: string;
  url: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route of the app, in registration order (HEAD routes, twins of GET ones, left out). */
    registeredRoutes: readonly RegisteredRoute[];
  }
  interface FastifyRequest {
    /**
     * Who acts in this request, for the audit log: set by a hook before the handler. The identity
     * app names the system for every request, then the admin API, the console and SCIM their actor;
     * the site sets it on the routes that write. Handlers pass it to the services that change something.
     */
    auditContext: AuditContext;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Header values that are credentials; pino replaces them with "[Redacted]" wherever they appear. */
const REDACTED = [
  'req.headers.authorization',
  'req.headers["api-key"]',
  'req.headers.access_token',
  'req.headers.id_token',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
];

/**
 * Path segments that are credentials: a magic link's token (/magic/<token>; /magic/code is the
 * code form's own route), the console owner's one-time sign-in token (/console/first-sign-in/<token>),
 * a password reset link's token (/customers/<key>/reset/<token>)
 * and an OpenID provider interaction's uid (/customers/<key>/interaction/<uid>, /customers/<key>/auth/<uid>).
 * Case-insensitive: a mistyped path is a 404 whose URL still holds the token.
 */
const SECRET_SEGMENT = /(\/magic\/(?!code(?:[/?#]|$))|\/first-sign-in\/|\/customers\/[^/?#]+\/reset\/)[^/?#]+|(\/customers\/[^/?#]+\/(?:interaction|auth)\/)[^/?#]+/gi;

/** The URL as logs may show it: secret path segments replaced by [token] / [uid]. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_SEGMENT, (_match, token: string | undefined, oidc: string | undefined) => (token ? `${token}[token]` : `${oidc}[uid]`));
}

/**
 * Every line that names a request's URL goes through these (Fastify's own `req` lines, ours with a
 * `url` field), so no level and no route hook order can log a secret segment. `req` is Fastify's
 * default serializer with the URL redacted.
 */
const SERIALIZERS = {
  // Fastify passes its request (typed as the raw one).
  req: (raw: unknown) => {
    const request = raw as FastifyRequest;
    const version = request.headers?.['accept-version'];
    return {
      method: request.method,
      url: typeof request.url === 'string' ? redactUrl(request.url) : undefined,
      version: typeof version === 'string' ? version : undefined,
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
    };
  },
  url: (url: unknown) => (typeof url === 'string' ? redactUrl(url) : url),
};

let stdout: pino.DestinationStream | undefined;

/**
 * Both faces log to one asynchronous stdout destination: a slow reader of the logs delays lines,
 * never requests. pino flushes what is still buffered when the process exits.
 */
function stdoutLog(): pino.DestinationStream {
  return (stdout ??= pino.destination({ dest: 1, sync: false }));
}

export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const serverOptions: FastifyServerOptions = {
    logger: options.logLevel === 'silent' ? false : {
      level: options.logLevel,
      redact: REDACTED,
      serializers: SERIALIZERS,
      stream: options.logStream ?? stdoutLog(),
    },
    bodyLimit: options.bodyLimit ?? 256 * 1024,
    // Fastify accepts a hop count at run time though its types omit it.
    trustProxy: (options.trustProxy ?? false) as FastifyServerOptions['trustProxy'],
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    frameworkErrors: (error, request, rawReply) => {
      const reply = rawReply as FastifyReply;
      reply.header('x-request-id', request.id);
      sendWire(reply, options.renderError?.(error) ?? { status: error.statusCode ?? 400, body: 'Bad Request' });
    },
    clientErrorHandler(error: NodeJS.ErrnoException, socket) { answerClientError(error, socket, options.renderError); },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: true },
    schemaController: { compilersFactory: { buildValidator, buildSerializer } },
  };
  const app = Fastify(serverOptions);
  installInputChecks(app);
  const routes: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', routes);
  app.decorateRequest('auditContext', null as unknown as AuditContext);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url });
  });
  // Fastify's own request logging writes two info lines per request, a fifth of a small request's
  // cost: the arrival goes to debug, and one line at the end says what happened.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    request.log.debug({ req: request }, 'incoming request');
    done();
  });

  const draining = installDraining(app);
  // Callback style: these run on every request, and an async hook costs a promise each time.
  app.addHook('onSend', (request, reply, payload, done) => {
    // While closing, every answer closes its connection (draining.ts says why).
    if (draining.closing) reply.header('connection', 'close');
    // An answer that closes the connection before the request body is read (a 413 on its
    // Content-Length, a 415) would be followed by a reset: Node closes a socket with the client's
    // bytes still unread, and a client still writing gets EPIPE and never reads the answer. So
    // the body is read and discarded first, boundedly (issue 13 item 9); light-my-request's
    // requests have no `complete` and are left alone.
    if (request.raw.complete === false && String(reply.getHeader('connection')).toLowerCase() === 'close') {
      discard(request.raw, () => done(null, payload));
      return;
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime }, 'request completed');
    if (draining.closing) setImmediate(() => app.server.closeIdleConnections());
    done();
  });
  return app;
}

/** Sends a face's error body: a string as text/plain (as the spec shows for some routes) unless `type` says otherwise, else JSON. */
export function sendWire(reply: FastifyReply, wire: WireError): FastifyReply {
  if (wire.headers) reply.headers(wire.headers);
  reply.code(wire.status).type(wire.type ?? (typeof wire.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8'));
  return reply.send(wire.body);
}

/**
 * How every face logs an error it answers with a 5xx. A dependency that cannot be reached (a 503:
 * the database or Redis down or silent) is an outage an operator watches for, not a defect: one warn
 * line naming the dependency and the driver's short reason, no stack (a stack per refused request
 * during an outage would bury everything else). Anything else is unexpected: error level, with the
 * error serialized (stack included) so it can be fixed.
 */
export function logServerError(log: FastifyBaseLogger, error: unknown): void {
  const unavailable = asServiceUnavailable(error);
  if (unavailable) {
    const { code } = (error ?? {}) as { code?: unknown };
    const reason = error instanceof Error ? error.message.slice(0, 200) : undefined;
    log.warn({ dependency: unavailable.dependency, ...(typeof code === 'string' ? { code } : {}), reason }, `${unavailable.dependency} unavailable: answered 503`);
    return;
  }
  log.error({ err: error }, 'unexpected error');
}
