/**
 * The Fastify factory both faces share: request ids, JSON logs that never carry credentials,
 * strict JSON parsing (no prototype poisoning), no type coercion, and a small body limit.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';

export interface HttpAppOptions {
  logLevel: string;
  /** Largest accepted request body, in bytes. */
  bodyLimit?: number;
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

export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const serverOptions: FastifyServerOptions = {
    logger: options.logLevel === 'silent' ? false : { level: options.logLevel, redact: REDACTED },
    bodyLimit: options.bodyLimit ?? 256 * 1024,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: true },
  };
  const app = Fastify(serverOptions);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  return app;
}

// Control characters have no place in identity data and are how header/log injection starts.
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Normalises a parsed JSON body before schema validation: `null` in an object property means the
 * property is absent (clients send `"phone": null`), and strings with control characters are refused.
 * @returns the path of the first string with a control character, or undefined.
 */
export function normaliseBody(value: unknown, path = ''): string | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = normaliseBody(value[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const child = record[key];
      const childPath = path ? `${path}.${key}` : key;
      if (child === null) { delete record[key]; continue; }
      if (CONTROL.test(key)) return childPath;
      const bad = normaliseBody(child, childPath);
      if (bad) return bad;
    }
    return undefined;
  }
  if (typeof value === 'string' && CONTROL.test(value)) return path || 'body';
  return undefined;
}
