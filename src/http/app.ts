/**
 * The Fastify factory both faces share: request ids, JSON logs that never carry credentials,
 * strict JSON parsing (no prototype poisoning), no type coercion, and a small body limit.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import Fastify, {
  errorCodes, LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions,
} from 'fastify';
import { finished, type Duplex, type Readable } from 'node:stream';
import pino from 'pino';
import secureJson from 'secure-json-parse';
import { Invalid, LatchkeyError } from '../lib/errors.ts';

export interface HttpAppOptions {
  logLevel: string;
  /** Largest accepted request body, in bytes. */
  bodyLimit?: number;
  /** Where JSON log lines go (default stdout); tests pass a stream to read them. */
  logStream?: { write(line: string): void };
  /**
   * Answers errors Fastify raises before routing (a malformed URL): no hook runs for them, so
   * the face renders them in its own error shape. The default is a bare 400.
   */
  frameworkErrors?: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;
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
 * code form's own route) and an OpenID provider interaction's uid (/customers/<key>/interaction/<uid>,
 * /customers/<key>/auth/<uid>). Case-insensitive: a mistyped path is a 404 whose URL still holds the token.
 */
const SECRET_SEGMENT = /(\/magic\/)(?!code(?:[/?#]|$))[^/?#]+|(\/customers\/[^/?#]+\/(?:interaction|auth)\/)[^/?#]+/gi;

/** The URL as logs may show it: secret path segments replaced by [token] / [uid]. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_SEGMENT, (_match, magic: string | undefined, oidc: string | undefined) => (magic ? `${magic}[token]` : `${oidc}[uid]`));
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
      if (options.frameworkErrors) return options.frameworkErrors(error, request as FastifyRequest, reply);
      reply.code(error.statusCode ?? 400).type('text/plain; charset=utf-8').send('Bad Request');
    },
    clientErrorHandler(error: NodeJS.ErrnoException, socket) { answerClientError(error, socket, options.frameworkErrors); },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: true },
  };
  const app = Fastify(serverOptions);
  installInputChecks(app);
  const routes: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', routes);
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

  // Draining: close() reaps only the keep-alive sockets idle at that instant. One that answers an
  // in-flight request afterwards would stay open for keepAliveTimeout (72 s) and hold close() up,
  // so while closing every answer says Connection: close and idle sockets are reaped again.
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  // Callback style: these run on every request, and an async hook costs a promise each time.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
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
    if (closing) setImmediate(() => app.server.closeIdleConnections());
    done();
  });
  return app;
}

// Control characters have no place in identity data and are how header/log injection starts.
const CONTROL = /[\u0000-\u001f\u007f]/;
// With the u flag a paired surrogate is one code point, so this matches only lone halves: text
// that is not Unicode, which the database would silently turn into U+FFFD.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Real bodies nest four levels deep; recursion over attacker-chosen depth ends in a stack overflow. */
export const MAX_BODY_DEPTH = 32;

/** Why a body was refused before schema validation: the field's path and the rule it breaks. */
export interface BadInput {
  path: string;
  rule: string;
}

/**
 * Normalises a parsed JSON body before schema validation: `null` in an object property means the
 * property is absent (clients send `"phone": null`); strings (values and keys) with control
 * characters or lone surrogates are refused, and so is nesting deeper than MAX_BODY_DEPTH.
 * @returns the first problem found, or undefined.
 */
export function checkBody(value: unknown): BadInput | undefined {
  return walk(value, '', 0);
}

function badText(text: string): string | undefined {
  if (CONTROL.test(text)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode text';
  return undefined;
}

function walk(value: unknown, path: string, depth: number): BadInput | undefined {
  if (typeof value === 'string') {
    const rule = badText(value);
    return rule ? { path: path || 'body', rule } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_BODY_DEPTH) return { path: path || 'body', rule: `must not nest deeper than ${MAX_BODY_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = walk(value[i], `${path}[${i}]`, depth + 1);
      if (bad) return bad;
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const child = record[key];
    const childPath = path ? `${path}.${key}` : key;
    const keyRule = badText(key);
    if (keyRule) return { path: childPath, rule: keyRule };
    if (child === null) { delete record[key]; continue; }
    const bad = walk(child, childPath, depth + 1);
    if (bad) return bad;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Input every route of both faces refuses (issue 13 item 7): text that is not UTF-8, and NUL
// characters, which PostgreSQL cannot store in text (a 500 there) and SQLite would store.

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lossyUtf8 = new TextDecoder('utf-8');
const NUL = '\u0000';
const REPLACEMENT = '\ufffd';
const FORM_TYPES = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i;

const kPhase = Symbol('latchkey.phase');
type Phase = 'body' | 'handler';

/**
 * True when `error` came from reading the request body of a multipart request (busboy's plain
 * Errors: no boundary, a cut-off form): the client's bytes, so a 400, not a 500.
 */
export function isMalformedMultipart(request: FastifyRequest, error: unknown): boolean {
  if ((request as unknown as Record<symbol, Phase>)[kPhase] !== 'body') return false;
  if (!(error instanceof Error) || error instanceof LatchkeyError) return false;
  if (typeof (error as Partial<FastifyError>).statusCode === 'number' || (error as Partial<FastifyError>).validation) return false;
  return /^multipart\//i.test(String(request.headers['content-type'] ?? ''));
}

function installInputChecks(app: FastifyInstance): void {
  // JSON bodies are decoded strictly from the raw bytes: Fastify's own parser decodes lossily, so
  // invalid UTF-8 became U+FFFD and was stored. Parsed as Fastify does (secure-json-parse, the
  // same prototype-poisoning refusals).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, raw, done) => {
    const bytes = raw as Buffer;
    if (bytes.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      return done(new Invalid(culpritOfBadUtf8(bytes), 'must be valid UTF-8'), undefined);
    }
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
    }
  });

  // Where a request is, for telling body-reading failures from the handler's (isMalformedMultipart).
  // Hooks of the root run before any plugin's: the multipart plugin reads its body after this one.
  app.addHook('preValidation', (request, _reply, done) => {
    (request as unknown as Record<symbol, Phase>)[kPhase] = 'body';
    done();
  });
  // After every parser and plugin (the multipart fields are on the body only now), before handlers.
  app.addHook('preHandler', (request, _reply, done) => {
    (request as unknown as Record<symbol, Phase>)[kPhase] = 'handler';
    const bad = checkText(request);
    done(bad ? new Invalid(bad.path, bad.rule) : undefined);
  });
}

/**
 * Names the field holding invalid UTF-8: the bytes decoded lossily, the first string or key with a
 * U+FFFD. "body" when that is unclear (the bytes also hold a genuine U+FFFD, or are not JSON).
 */
function culpritOfBadUtf8(bytes: Buffer): string {
  if (hasGenuineReplacement(bytes)) return 'body';
  try {
    return clipPath(findText(JSON.parse(lossyUtf8.decode(bytes)), '', 0, (t) => t.includes(REPLACEMENT)) ?? 'body');
  } catch {
    return 'body';
  }
}

/** Whether the raw bytes hold a U+FFFD of their own: its UTF-8 bytes (EF BF BD) or its JSON escape. */
function hasGenuineReplacement(bytes: Buffer): boolean {
  if (/\\u[fF][fF][fF][dD]/.test(bytes.toString('latin1'))) return true;
  for (let i = bytes.indexOf(0xef); i >= 0; i = bytes.indexOf(0xef, i + 1)) {
    if (bytes[i + 1] === 0xbf && bytes[i + 2] === 0xbd) return true;
  }
  return false;
}

/** Caller-chosen keys are echoed: keep the path short. */
const clipPath = (path: string) => (path.length > 64 ? `${path.slice(0, 64)}…` : path);

/** The path of the first string or key (depth-first, bounded) that `bad` holds for. */
function findText(value: unknown, path: string, depth: number, bad: (text: string) => boolean): string | undefined {
  if (typeof value === 'string') return bad(value) ? path || 'body' : undefined;
  if (value === null || typeof value !== 'object' || depth >= MAX_BODY_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findText(value[i], `${path}[${i}]`, depth + 1, bad);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (bad(key)) return childPath;
    const found = findText(child, childPath, depth + 1, bad);
    if (found) return found;
  }
  return undefined;
}

const siteTextRule = (text: string): string | undefined => {
  if (text.includes(NUL)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode text';
  return undefined;
};

/** The first NUL or lone surrogate in the body, query or path parameters; in a form, also U+FFFD. */
function checkText(request: FastifyRequest): BadInput | undefined {
  const inForm = FORM_TYPES.test(String(request.headers['content-type'] ?? ''));
  // A form is decoded lossily by its parser: a U+FFFD there is what invalid UTF-8 became.
  const rule = (text: string) => siteTextRule(text) ?? (inForm && text.includes(REPLACEMENT) ? 'must be valid UTF-8' : undefined);
  const sources: [unknown, string][] = [[request.params, 'path'], [request.query, 'query'], [formValues(request.body, inForm), '']];
  for (const [value, prefix] of sources) {
    let found: BadInput | undefined;
    const path = findText(value, prefix, 0, (text) => {
      const broken = rule(text);
      if (broken) found = { path: '', rule: broken };
      return broken !== undefined;
    });
    if (path !== undefined && found) return { path: clipPath(path), rule: found.rule };
  }
  return undefined;
}

/** Multipart fields arrive as part objects (which point back at the whole body): their values only. */
function formValues(body: unknown, inForm: boolean): unknown {
  if (!inForm || body === null || typeof body !== 'object') return body;
  const values: Record<string, unknown> = {};
  for (const [key, part] of Object.entries(body as Record<string, unknown>)) {
    const one = (p: unknown) => (p !== null && typeof p === 'object' && 'value' in p ? (p as { value: unknown }).value : p);
    values[key] = Array.isArray(part) ? part.map(one) : one(part);
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// Requests Node's parser refuses before Fastify sees them (issue 13 item 8).

/**
 * How long, and how many bytes, a refused connection or an unread request body is read and
 * discarded before the connection is closed. The bytes cover a client that sends a few MB
 * before it reads (the 413's own body limit is 256 KiB); the time bounds a client that trickles.
 */
const LINGER_MS = 2000;
const LINGER_BYTES = 4 * 1024 * 1024;

/**
 * Answers a request Node's HTTP parser refused (headers over the limit, Transfer-Encoding with
 * Content-Length, bad framing) with a complete response in the face's error shape, then closes.
 * Fastify's own handler destroys the socket at once: with the client's bytes still unread that is
 * a reset, and the client never reads the answer. So the write side is closed first and the rest
 * is read and discarded for a bounded time (nginx's lingering close).
 */
function answerClientError(
  error: NodeJS.ErrnoException,
  socket: Duplex,
  render: HttpAppOptions['frameworkErrors'],
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const code = status === 431 ? 'LK_HEADER_OVERFLOW' : status === 408 ? 'LK_REQUEST_TIMEOUT' : 'LK_MALFORMED_REQUEST';
  const { type, body } = renderClientError(render, Object.assign(new Error(code), { code, statusCode: status }));
  if (socket.writable) {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`
      + `Connection: close\r\n\r\n${body}`);
  }
  discard(socket, () => socket.destroy());
}

/**
 * Reads and discards `stream` until it ends, fails or closes, or for at most LINGER_MS and
 * LINGER_BYTES, then calls `done` once: the lingering close of both a refused connection
 * (answerClientError) and a request answered before its body was read (the onSend hook).
 */
function discard(stream: Readable, done: () => void): void {
  let read = 0;
  let over = false;
  const onData = (chunk: Buffer) => { read += chunk.length; if (read > LINGER_BYTES) stop(); };
  const stop = () => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    stream.off('data', onData);
    stopWatching();
    done();
  };
  const timer = setTimeout(stop, LINGER_MS);
  timer.unref();
  stream.on('data', onData);
  // Only the reading side: a socket's writing side has its own end.
  const stopWatching = finished(stream, { writable: false }, stop);
  stream.resume();
}

/** The face's own error body for `error`, got from its framework-error renderer with a stand-in reply. */
function renderClientError(render: HttpAppOptions['frameworkErrors'], error: FastifyError): { type: string; body: string } {
  let type = 'application/json; charset=utf-8';
  let body: unknown = { statusCode: error.statusCode, error: STATUS_CODES[error.statusCode ?? 400] };
  if (render) {
    const reply = {
      header() { return reply; },
      headers() { return reply; },
      code() { return reply; },
      type(value: string) { type = value; return reply; },
      send(value: unknown) { body = value; return reply; },
    };
    try {
      render(error, {} as FastifyRequest, reply as unknown as FastifyReply);
    } catch {
      // The default body stands.
    }
  }
  return { type, body: typeof body === 'string' ? body : JSON.stringify(body) };
}
