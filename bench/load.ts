/**
 * Load generation with autocannon against 127.0.0.1: one request shape per run, headers made per
 * request (signed admin requests need a fresh Timestamp), latencies recorded per response in
 * fractional milliseconds (autocannon's own histogram rounds to whole milliseconds).
 */
import { createHash } from 'node:crypto';
import autocannon from 'autocannon';
import type { Face } from './server.ts';

/** One request as the load generator sends it, again and again. */
export interface RequestSpec {
  /** Which face of the server under test answers it. */
  face: Face;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, e.g. `/api/admin/users/get`. */
  path: string;
  /** JSON-serialised when not a string. */
  body?: unknown;
  /** Fixed headers (content-type is added for a body). */
  headers?: Record<string, string>;
  /** Headers computed per request, e.g. a signature; must be cheap. */
  dynamicHeaders?: () => Record<string, string>;
  /** A body computed per request (e.g. a different user each time); overrides `body`. */
  dynamicBody?: () => unknown;
  /** A path computed per request (e.g. a single-use link each time); overrides `path` in load runs. */
  dynamicPath?: () => string;
  /** The status that counts as success besides 2xx (e.g. 303 for a redirecting form POST). */
  okStatus?: number;
}

export interface LoadRun {
  seconds: number;
  ok: number;
  /** Answers other than 2xx (or the spec's okStatus), connection errors and timeouts. */
  failed: number;
  statusCodes: Record<string, number>;
  latenciesMs: Float64Array;
}

export interface LoadStats {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  failed: number;
  statusCodes: Record<string, number>;
}

/**
 * Signed admin headers (spec, Authentication): one signature per millisecond, cached, so the
 * client spends almost nothing on SHA-512 and the server's replay guard sees what a busy real
 * client produces (a new triple every millisecond, each reused within its 2 s grace).
 */
export function adminSigner(customerKey: string, apiKey: string): () => Record<string, string> {
  let signedAt = -1;
  let headers: Record<string, string> = {};
  return () => {
    const now = Date.now();
    if (now !== signedAt) {
      signedAt = now;
      const timestamp = String(now);
      headers = {
        'Customer-Key': customerKey,
        Timestamp: timestamp,
        Authorization: createHash('sha512').update(customerKey + timestamp + apiKey).digest('hex'),
      };
    }
    return headers;
  };
}

/**
 * Signed admin headers with a new triple on every request, as a migration script or a flooder signs:
 * timestamps one millisecond apart from 290 s ago on, running ahead of the clock when requests come
 * faster than one a millisecond (at most to 290 s ahead; past that it waits for the clock). Every
 * request costs the client one SHA-512 and the server's replay guard one new entry.
 */
export function distinctAdminSigner(customerKey: string, apiKey: string): () => Record<string, string> {
  const WINDOW_MS = 290_000;
  let last = 0;
  return () => {
    const now = Date.now();
    last = Math.min(Math.max(last + 1, now - WINDOW_MS), now + WINDOW_MS);
    const timestamp = String(last);
    return {
      'Customer-Key': customerKey,
      Timestamp: timestamp,
      Authorization: createHash('sha512').update(customerKey + timestamp + apiKey).digest('hex'),
    };
  };
}

const encode = (body: unknown): string => (typeof body === 'string' ? body : JSON.stringify(body));

/** The body of one request as sent (a fresh one when the spec makes them per request). */
export function encodeBody(spec: RequestSpec): string | undefined {
  if (spec.dynamicBody) return encode(spec.dynamicBody());
  return spec.body === undefined ? undefined : encode(spec.body);
}

/** Fixed headers, with `Content-Type: application/json` for a body unless the spec names its own. */
function fixedHeaders(spec: RequestSpec): Record<string, string> {
  const hasBody = spec.body !== undefined || spec.dynamicBody !== undefined;
  const namesType = Object.keys(spec.headers ?? {}).some((h) => h.toLowerCase() === 'content-type');
  return { ...(hasBody && !namesType ? { 'Content-Type': 'application/json' } : {}), ...spec.headers };
}

/** The headers of one request, as sent (for capturing the real response before a run). */
export function headersOf(spec: RequestSpec): Record<string, string> {
  return { ...fixedHeaders(spec), ...spec.dynamicHeaders?.() };
}

/** Runs `spec` against 127.0.0.1:port for `seconds` with `connections` keep-alive connections. */
export async function runLoad(port: number, spec: RequestSpec, seconds: number, connections: number): Promise<LoadRun> {
  const body = spec.dynamicBody ? undefined : encodeBody(spec);
  const fixed = fixedHeaders(spec);
  const { dynamicHeaders, dynamicBody, dynamicPath, okStatus } = spec;
  const perRequest = dynamicHeaders || dynamicBody || dynamicPath
    ? (request: { headers: Record<string, string>; body?: string | Buffer; path?: string }) => {
      if (dynamicHeaders) Object.assign(request.headers, dynamicHeaders());
      if (dynamicBody) request.body = encode(dynamicBody());
      if (dynamicPath) request.path = dynamicPath();
      return request;
    }
    : undefined;
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let ok = 0;
  let notOk = 0;
  const started = process.hrtime.bigint();
  const instance = autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    timeout: 10,
    requests: [{
      method: spec.method,
      path: spec.path,
      headers: fixed,
      ...(body !== undefined ? { body } : {}),
      ...(perRequest ? { setupRequest: perRequest } : {}),
    }],
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    if ((statusCode < 200 || statusCode >= 300) && statusCode !== okStatus) { notOk++; return; }
    ok++;
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = responseTimeMs;
  });
  const result = await instance;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const statusCodes: Record<string, number> = {};
  for (const [code, { count: n }] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = n;
  return {
    // autocannon stops on a timer: its own duration is the measured window.
    seconds: result.duration > 0 ? result.duration : elapsed,
    ok,
    failed: notOk + result.errors + result.timeouts,
    statusCodes,
    latenciesMs: latencies.subarray(0, count),
  };
}

/** Merges runs of one request shape (interleaved rounds) into one figure. */
export function summarise(runs: LoadRun[]): LoadStats {
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  const ok = runs.reduce((s, r) => s + r.ok, 0);
  const all = new Float64Array(runs.reduce((s, r) => s + r.latenciesMs.length, 0));
  let at = 0;
  for (const r of runs) { all.set(r.latenciesMs, at); at += r.latenciesMs.length; }
  all.sort();
  const pick = (q: number) => (all.length === 0 ? NaN : all[Math.min(all.length - 1, Math.floor(q * all.length))]);
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    requestsPerSecond: seconds > 0 ? ok / seconds : 0,
    p50Ms: pick(0.5),
    p99Ms: pick(0.99),
    ok,
    failed: runs.reduce((s, r) => s + r.failed, 0),
    statusCodes,
  };
}
