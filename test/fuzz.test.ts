/**
 * Fuzz over every route of both faces (issue 13 item 12): the routes come from registeredRoutes of
 * the apps compose() builds (as the server does), so routes added later are fuzzed too. Inputs: NUL
 * and lone surrogates, invalid UTF-8 bytes, wrong types, nesting past the depth limit, duplicate
 * keys, huge numbers, oversized strings and multipart parts, empty bodies, wrong content types,
 * odd query strings and path parameters. Admin requests are signed and site requests carry a valid
 * JWT, so the input reaches the handlers. Over real sockets: never a 5xx, never a dropped
 * connection, and every 4xx in its face's documented shape.
 *
 * The seed is fixed (fast-check prints it on failure, with the path to replay); LATCHKEY_FUZZ_SEED
 * picks another, LATCHKEY_FUZZ_RUNS the runs per route.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { SYSTEM } from '../src/audit/context.ts';
import { describeEachStore } from './helpers/stores.ts';
import { buildSite, PASSWORD } from './site/helpers.ts';

const SEED = process.env.LATCHKEY_FUZZ_SEED ? Number(process.env.LATCHKEY_FUZZ_SEED) : 130_012;
const RUNS_PER_ROUTE = Number(process.env.LATCHKEY_FUZZ_RUNS ?? 12);
const USERNAME = 'fuzz-user';

type Face = 'site' | 'identity';
interface Route { face: Face; method: string; url: string }

interface FuzzRequest {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** What was sent, for the failure message. */
  label: string;
}

interface Answer { status: number; type: string; body: Buffer }

// ---------------------------------------------------------------------------------------------
// Wire: node:http with a connection of its own per request (no keep-alive reuse races); a reset,
// a hang-up or a cut body rejects.

function send(port: number, method: string, req: FuzzRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({
      host: '127.0.0.1', port, method, path: req.path, agent: false,
      headers: { ...req.headers, 'content-length': String(req.body.length) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('response cut off')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }));
    });
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

// ---------------------------------------------------------------------------------------------
// The documented error bodies.

const isString = (v: unknown) => typeof v === 'string';
const keysAre = (body: Record<string, unknown>, keys: string[]) =>
  Object.keys(body).length === keys.length && keys.every((k) => k in body);

/** The admin API's variants (identity/errors.ts): each whole key set, with its types. */
function adminShape(status: number, body: Record<string, unknown>): boolean {
  const code = String(status);
  return (keysAre(body, ['status', 'code', 'message']) && body.status === 'ERROR' && body.code === code && isString(body.message))
    || (keysAre(body, ['status', 'code', 'message']) && body.status === 'error' && body.code === code && isString(body.message))
    || (keysAre(body, ['customerId', 'status', 'message']) && typeof body.customerId === 'number' && body.status === 'ERROR' && isString(body.message))
    || (keysAre(body, ['username', 'status', 'message']) && body.status === 'FAILED' && isString(body.message))
    || (keysAre(body, ['status', 'message']) && body.status === 'FAILED' && isString(body.message))
    || (keysAre(body, ['status', 'statusCode', 'message']) && body.status === 'ERROR' && body.statusCode === status && isString(body.message));
}

const siteShape = (status: number, body: Record<string, unknown>) => keysAre(body, ['status', 'error', 'code', 'error_description'])
  && body.status === 'error' && isString(body.error) && body.code === String(status) && isString(body.error_description);

const apiTokenShape = (body: Record<string, unknown>) => keysAre(body, ['error'])
  && typeof body.error === 'object' && body.error !== null
  && keysAre(body.error as Record<string, unknown>, ['status', 'message']) && (body.error as Record<string, unknown>).status === 'ERROR';

/** RFC 6749 §5.2, and oidc-provider's errors (the same members). */
const oauthShape = (body: Record<string, unknown>) => isString(body.error)
  && Object.keys(body).every((k) => ['error', 'error_description', 'error_uri', 'state', 'scope', 'iss'].includes(k));

/** The hosted pages' passkey calls, made by our own script (identity/passkeys/glue.ts): a message, and where to go next. */
const passkeyCallShape = (body: Record<string, unknown>) => isString(body.message)
  && Object.keys(body).every((k) => ['message', 'location'].includes(k));

/** RFC 7644 §3.12, the SCIM face's only error body (src/scim/errors.ts). */
const scimShape = (status: number, body: Record<string, unknown>) => Array.isArray(body.schemas)
  && body.schemas[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' && body.status === String(status) && isString(body.detail)
  && Object.keys(body).every((k) => ['schemas', 'status', 'scimType', 'detail'].includes(k));

const isScim = (url: string) => url.startsWith('/scim/');

/** Identity routes that machines call: the admin API and the token endpoint; the rest are pages. */
const isApi = (url: string) => url.startsWith('/api/') || url.startsWith('/moas/') || url === '/oauth/token';

/** Why `answer` breaks the contract, or undefined. */
function problem(route: Route, answer: Answer): string | undefined {
  if (answer.status >= 500) return `a ${answer.status}`;
  if (answer.status < 400) return undefined;
  const html = /^text\/html/.test(answer.type);
  const text = answer.body.toString('utf8');
  if (/\n\s+at .+:\d+:\d+/.test(text)) return 'a stack trace';
  // The identity face's browser pages (/magic/<token>, the OpenID provider, the console): HTML errors.
  if (route.face === 'identity' && html && !isApi(route.url)) return undefined;
  if (route.face === 'identity' && (route.url.startsWith('/api/') || route.url.startsWith('/moas/'))) {
    // disable/enable and delete answer some errors as plain text (the spec's own).
    if (/^text\/plain/.test(answer.type) && text.length > 0 && !text.startsWith('{')) return undefined;
  }
  // SCIM answers application/scim+json; what the server refuses before routing (431, a malformed URL) is the face's JSON.
  const scimType = route.face === 'identity' && isScim(route.url) && /^application\/scim\+json/.test(answer.type);
  if (!scimType && !/^application\/json/.test(answer.type)) return `content type ${answer.type}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'a body that is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'a JSON body that is not an object';
  const record = body as Record<string, unknown>;
  // The face's shape always fits: errors raised before routing (a malformed URL) cannot know the
  // route. Routes with a variant of their own may also answer in it.
  const fits = route.face === 'site'
    // The API-token 401 answers an API-token credential (any Basic username:secret) on every protected route.
    ? siteShape(answer.status, record) || ((route.url.startsWith('/rest/api/2/') || answer.status === 401) && apiTokenShape(record))
    : scimType ? scimShape(answer.status, record) : adminShape(answer.status, record) || ((route.url === '/oauth/token' || route.url.startsWith('/customers/')) && oauthShape(record))
      || (/\/passkeys?(\/|$)/.test(route.url) && !isApi(route.url) && passkeyCallShape(record));
  return fits ? undefined : 'a body not in the face\'s error shape';
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/** Percent-encodes every byte but the unreserved ones: fuzzed text becomes a path or query part. */
const encode = (text: string) => Array.from(Buffer.from(text, 'utf8'), (b) =>
  (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');

/** Written in place of a U+E000 after encoding: byte sequences that are not UTF-8. */
const BAD_UTF8 = '\ue000';
const badBytes = fc.constantFrom(
  Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), Buffer.from([0xe2, 0x82]), Buffer.from([0x80]),
);
const PLACEHOLDER = Buffer.from(BAD_UTF8, 'utf8');

function withBadBytes(bytes: Buffer, bad: Buffer): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = bytes.indexOf(PLACEHOLDER); at >= 0; at = bytes.indexOf(PLACEHOLDER, from)) {
    parts.push(bytes.subarray(from, at), bad);
    from = at + PLACEHOLDER.length;
  }
  parts.push(bytes.subarray(from));
  return Buffer.concat(parts);
}

const text = fc.oneof(
  fc.constantFrom(USERNAME, `${USERNAME}@example.test`, PASSWORD, '', ' ', 'admin', 'Default', 'client_credentials', 'OAUTH', 'JWT', 'TOTP', 'true', '0', '-1'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('a\u0000b', '\u0000', 'x\ud800', '\udfff', `a${BAD_UTF8}b`, BAD_UTF8, '\u202e\u2028', '\ufffd', '😀'.repeat(30), '<script>', '../../etc/passwd', "' or 1=1 --"),
  fc.integer({ min: 100, max: 70_000 }).map((n) => 'x'.repeat(n)),
);

const NUMBERS = ['0', '-0', '1', '-1', '2', '1.5', '1e400', '-1e400', '1E-400', '18446744073709551616', '9007199254740993',
  '-9223372036854775809', '123456789012345678901234567890', '1e308', '0.1e1', '100000', '2147483648'];
const number = fc.oneof(fc.constantFrom(...NUMBERS), fc.integer({ min: -5, max: 1000 }).map(String));

/** A JSON string literal: escapes written by JSON.stringify, plus the raw escapes stringify never writes. */
const stringLiteral = fc.oneof(
  { weight: 5, arbitrary: text.map((t) => JSON.stringify(t).replace(/\\ue000/gi, BAD_UTF8)) },
  { weight: 1, arbitrary: fc.constantFrom('"\\u0000"', '"\\ud800"', '"a\\udc00b"', '"\\u0000\\u0000"', '"\\uFFFF"') },
);

function jsonFor(fields: string[]): fc.Arbitrary<string> {
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...(fields.length ? fields : ['username'])).map((k) => JSON.stringify(k)) },
    { weight: 1, arbitrary: fc.constantFrom('"__proto__"', '"constructor"', '"prototype"', '"a\\u0000"', '""', `"k${BAD_UTF8}"`) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }).map((k) => JSON.stringify(k)) },
  );
  const { value } = fc.letrec<{ value: string; leaf: string; array: string; object: string }>((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('leaf'), tie('array'), tie('object')),
    leaf: fc.oneof(number, stringLiteral, fc.constantFrom('null', 'true', 'false')),
    array: fc.array(tie('value'), { maxLength: 4 }).map((xs) => `[${xs.join(',')}]`),
    // Pairs, not a record: the same key twice is a case.
    object: fc.array(fc.tuple(key, tie('value')), { maxLength: 6 }).map((ps) => `{${ps.map(([k, v]) => `${k}:${v}`).join(',')}}`),
  }));
  const deep = fc.tuple(fc.integer({ min: 30, max: 3000 }), fc.boolean(), key).map(([n, arrays, k]) => (arrays
    ? `{${k}:${'['.repeat(n)}1${']'.repeat(n)}}`
    : `${`{${k}:`.repeat(n)}1${'}'.repeat(n)}`));
  // An object of the route's fields, each of any type: what gets past the schema to the handler.
  const shaped = fc.array(fc.tuple(key, value), { minLength: 1, maxLength: 8 }).map((ps) => `{${ps.map(([k, v]) => `${k}:${v}`).join(',')}}`);
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    { weight: 2, arbitrary: value },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '{', '{"a":1}x', '[1,]', '{"a":1,}', "{'a':1}", 'NaN', '{"a":Infinity}', '\ufeff{}', '{"a":"\\x41"}') },
    { weight: 1, arbitrary: fc.integer({ min: 200_000, max: 300_000 }).map((n) => `{"username":"${'y'.repeat(n)}"}`) },
  );
}

function formFor(fields: string[]): fc.Arbitrary<string> {
  const value = fc.oneof(text.map(encode), fc.constantFrom('%00', '%FF', '%ED%A0%80', '%', '%ZZ', '+', '', 'a=b=c'));
  const name = fc.oneof(fc.constantFrom(...(fields.length ? fields : ['username'])), fc.constantFrom('__proto__', 'a[b]', 'a[]', '', '%00'));
  return fc.array(fc.tuple(name, value), { maxLength: 8 }).map((ps) => ps.map(([k, v]) => `${k}=${v}`).join('&'));
}

function multipartFor(fields: string[]): fc.Arbitrary<{ type: string; body: string }> {
  const part = fc.tuple(
    fc.oneof(fc.constantFrom(...(fields.length ? fields : ['username'])), fc.constantFrom('__proto__', 'a"b', '')),
    fc.oneof(text, fc.integer({ min: 100_000, max: 400_000 }).map((n) => 'z'.repeat(n))),
    fc.boolean(),
  ).map(([name, value, file]) => `Content-Disposition: form-data; name="${name}"${file ? '; filename="f.txt"\r\nContent-Type: application/octet-stream' : ''}\r\n\r\n${value}\r\n`);
  return fc.tuple(fc.array(part, { maxLength: 6 }), fc.integer({ min: 0, max: 300 }), fc.constantFrom('whole', 'unclosed', 'no-boundary', 'wrong-boundary'))
    .map(([parts, extra, form]) => {
      const many = Array.from({ length: extra > 250 ? extra : 0 }, (_, i) => `Content-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`);
      const body = [...parts, ...many].map((p) => `--fuzzb\r\n${p}`).join('') + (form === 'unclosed' ? '' : '--fuzzb--\r\n');
      const type = form === 'no-boundary' ? 'multipart/form-data' : form === 'wrong-boundary' ? 'multipart/form-data; boundary=other' : 'multipart/form-data; boundary=fuzzb';
      return { type, body };
    });
}

function bodyFor(fields: string[]): fc.Arbitrary<{ type?: string; body: string; label: string }> {
  const jsonTypes = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=latin1', 'application/scim+json');
  return fc.oneof(
    { weight: 8, arbitrary: fc.tuple(jsonTypes, jsonFor(fields)).map(([type, body]) => ({ type, body, label: 'json' })) },
    { weight: 2, arbitrary: formFor(fields).map((body) => ({ type: 'application/x-www-form-urlencoded', body, label: 'form' })) },
    { weight: 2, arbitrary: multipartFor(fields).map(({ type, body }) => ({ type, body, label: 'multipart' })) },
    { weight: 1, arbitrary: fc.constantFrom<{ type?: string; body: string; label: string }>(
      { body: '', label: 'empty' },
      { type: 'application/json', body: '', label: 'empty json' },
      { type: 'text/plain', body: 'hello', label: 'text' },
      { type: 'application/xml', body: '<a/>', label: 'xml' },
      { type: 'application/octet-stream', body: '\u0000\u0001\u00ff', label: 'octets' },
      { type: ';;;', body: '{}', label: 'bad type' },
      { type: 'application/x-www-form-urlencoded', body: '{"username":"x"}', label: 'json as form' },
      { body: '{"username":"x"}', label: 'json, no type' },
    ) },
  );
}

const queryFor = (names: string[]) => fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  { weight: 3, arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...names, 'limit', 'page', 'id'), fc.string({ maxLength: 6 }).map(encode)),
    fc.oneof(fc.constantFrom(...NUMBERS), text.map(encode), fc.constantFrom('%00', '%FF', '%', 'true', 'false'))), { maxLength: 5 })
    .map((ps) => `?${ps.map(([k, v]) => `${k}=${v}`).join('&')}`) },
  { weight: 1, arbitrary: fc.constantFrom('?', '?&&', '?=', '?%', '?a=%00', '?a=%FF', '?a[b]=1', '?a[]=1&a[]=2', '?__proto__[x]=1',
    '?constructor[prototype][x]=1', `?${'a=1&'.repeat(2000)}`, `?q=${'x'.repeat(8000)}`) },
);

const PATH_VALUES = ['1', '0', '-1', '00', '1.5', '1e400', '18446744073709551616', '-0', 'abc', 'expired', 'code', '%00', '%FF', '%ED%A0%80',
  '%C0%AF', '%', '%ZZ', '..', '%2F', '%2E%2E', 'a%20b', '%E2%80%AE', 'x'.repeat(300)];
const pathValue = fc.oneof(fc.constantFrom(...PATH_VALUES), text.filter((t) => t.length < 500).map(encode));
const PROVIDER_PATHS = ['.well-known/openid-configuration', 'auth', 'token', 'jwks', 'me', 'reg', 'session/end', 'token/introspection',
  'token/revocation', 'interaction/x', 'auth/x', 'x'];

/** The route's URL with its parameters filled: the real customer key mostly, fuzz otherwise. */
function pathFor(url: string, customerKey: string): fc.Arbitrary<string> {
  const pieces = url.split('/').map((segment) => {
    if (segment === ':customerKey') return fc.oneof({ weight: 4, arbitrary: fc.constant(customerKey) }, { weight: 1, arbitrary: pathValue });
    if (segment.startsWith(':')) return pathValue;
    if (segment === '*') return fc.oneof(fc.constantFrom(...PROVIDER_PATHS), pathValue);
    return fc.constant(segment);
  });
  return fc.tuple(...pieces).map((parts) => parts.join('/'));
}

/** Property names of the route's body and query in the face's OpenAPI document. */
function namesFrom(operation: unknown): string[] {
  const names = new Set<string>();
  const visit = (node: unknown, depth: number) => {
    if (node === null || typeof node !== 'object' || depth > 8) return;
    const record = node as Record<string, unknown>;
    if (record.properties && typeof record.properties === 'object') for (const k of Object.keys(record.properties)) names.add(k);
    if (typeof record.name === 'string' && (record.in === 'query' || record.in === 'formData')) names.add(record.name);
    for (const child of Object.values(record)) visit(child, depth + 1);
  };
  visit(operation, 0);
  return [...names];
}

/** SCIM's attributes and parameters (its routes are not in the OpenAPI document: SCIM has its own discovery). */
const SCIM_FIELDS = ['schemas', 'userName', 'emails', 'name', 'givenName', 'active', 'password', 'externalId', 'displayName', 'members',
  'Operations', 'op', 'path', 'value', 'filter', 'startIndex', 'count', 'excludedAttributes', 'attributes'];

const SITE_FIELDS = ['username', 'password', 'title', 'content', 'status', 'slug', 'name', 'login', 'expiresAt', 'expiration', 'label', 'excerpt'];

// ---------------------------------------------------------------------------------------------

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

describeEachStore('fuzz over every route of both faces', (kind) => {
  test('never a 5xx, never a dropped connection, every 4xx in the face\'s documented shape', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser(USERNAME);
    const jwt = await s.token(USERNAME);
    const ports: Record<Face, number> = { site: await listen(s.site), identity: await listen(s.identity) };
    const docs = {
      identity: (await s.identity.inject({ method: 'GET', url: '/api/openapi.json' })).json(),
      site: (await s.site.inject({ method: 'GET', url: '/openapi.json' })).json(),
    };
    const routes: Route[] = [
      ...s.site.registeredRoutes.map((r) => ({ face: 'site' as const, ...r })),
      ...s.identity.registeredRoutes.map((r) => ({ face: 'identity' as const, ...r })),
    ];
    // Enough to know the enumeration is not empty or cut short; every route below is fuzzed.
    assert.ok(routes.length > 60, `only ${routes.length} routes`);

    const statuses = new Map<string, number>();
    const basic = `Basic ${Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64')}`;
    const scimToken = (await s.composition.services.scimTokens.create(s.customer.customerId, 'fuzz', SYSTEM)).token;
    for (const route of routes) {
      const openapiPath = route.url.replace(/^\/moas/, '').replace(/:(\w+)/g, '{$1}');
      const operation = (docs[route.face].paths?.[openapiPath] ?? {})[route.method.toLowerCase()];
      const scim = route.face === 'identity' && isScim(route.url);
      const fields = [...new Set([...namesFrom(operation), ...(route.face === 'site' ? SITE_FIELDS : []), ...(scim ? SCIM_FIELDS : [])])];
      const credentials = route.face === 'site'
        ? fc.constantFrom<Record<string, string>>({ authorization: `Bearer ${jwt}` }, { authorization: `Bearer ${jwt}` }, { authorization: basic }, {})
        : scim
          ? fc.constantFrom<Record<string, string>>({ authorization: `Bearer ${scimToken}` }, { authorization: `Bearer ${scimToken}` }, { authorization: `Bearer ${scimToken}` }, { signed: '1' }, {})
          : fc.constantFrom<Record<string, string>>({ signed: '1' }, { signed: '1' }, { signed: '1' }, {});
      const withBody = route.method !== 'GET' && route.method !== 'OPTIONS';
      const request = fc.record({
        path: pathFor(route.url, s.customer.customerKey),
        query: queryFor(fields),
        credentials,
        body: withBody ? bodyFor(fields) : fc.constant({ body: '', label: 'none' } as { type?: string; body: string; label: string }),
        bad: badBytes,
      }).map(({ path, query, credentials: creds, body, bad }): FuzzRequest => {
        const headers: Record<string, string> = { ...creds };
        if (headers.signed) {
          delete headers.signed;
          Object.assign(headers, s.admin.headers());
        }
        if (body.type) headers['content-type'] = body.type;
        const bytes = withBadBytes(Buffer.from(body.body, 'utf8'), bad);
        return { path: `${path}${query}`, headers, body: bytes, label: `${body.label}, ${bytes.length} bytes: ${JSON.stringify(bytes.subarray(0, 300).toString('latin1'))}` };
      });
      await fc.assert(fc.asyncProperty(request, async (req) => {
        let answer: Answer;
        try {
          answer = await send(ports[route.face], route.method, req);
        } catch (error) {
          assert.fail(`${route.face} ${route.method} ${req.path.slice(0, 300)} (${req.label}): connection failed: ${(error as Error).message}`);
        }
        const key = `${route.face} ${answer.status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        const wrong = problem(route, answer);
        assert.equal(wrong, undefined, `${route.face} ${route.method} ${route.url} as ${req.path.slice(0, 300)} (${req.label}) got ${wrong}: `
          + `${answer.status} ${answer.type} ${answer.body.subarray(0, 500).toString('utf8')}`);
      }), { seed: SEED, numRuns: RUNS_PER_ROUTE, includeErrorInReport: true });
    }
    // What the fuzz reached: statuses per face (handlers answer 2xx and the domain's 4xx).
    t.diagnostic(`${routes.length} routes; ${[...statuses].sort().map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  });
});
