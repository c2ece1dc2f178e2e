/**
 * Bad input never yields a 5xx, a stack trace or a change: random and hostile bodies, correctly
 * signed, thrown at every admin route the app registers (/api and /moas/api). Each category has a
 * property test (fast-check) and focused examples with exact bodies.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { build, type TestApp } from '../helpers/app.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';

// Opened here, not inside the first test: the helper registers the schema's clean-up with after(),
// which, called inside a test, runs when that test ends and closes the store under the rest.
if (postgresUrl) await postgresStore();

const BODY_LIMIT = 256 * 1024;
const RUNS = 100;
const DENIED = 'API Request denied: Incorrect Authorization header.';
const NOT_AUTHORISED = 'You are not authorized to perform this operation.';

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  minimum?: number;
  required?: string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
};

interface Route {
  method: 'GET' | 'POST';
  url: string;
  /** The request body schema, from the OpenAPI document (the /moas twin shares the /api one). */
  schema: JsonSchema | undefined;
}

interface Attempt {
  contentType: string | undefined;
  payload: string;
}

// ---------------------------------------------------------------------------------------------
// The app under test: routes, seed data, and the state that must not change.

function adminRoutes(app: TestApp): Route[] {
  const doc = app.identity.swagger() as unknown as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
  };
  return app.identity.registeredRoutes
    .filter((r) => (r.url.startsWith('/api/') || r.url.startsWith('/moas/api/')) && !r.url.startsWith('/api/docs') && r.url !== '/api/openapi.json')
    .map((r) => {
      const operation = doc.paths[r.url.replace(/^\/moas/, '')]?.[r.method.toLowerCase()];
      const route: Route = { method: r.method as Route['method'], url: r.url, schema: operation?.requestBody?.content['application/json']?.schema };
      // fast-check prints counterexamples with this: the route, not its whole schema.
      return Object.assign(route, { [fc.toStringMethod]: () => `${r.method} ${r.url}` });
    });
}

async function seed(app: TestApp): Promise<void> {
  const customerKey = Number(app.customer.customerKey);
  const writes: [string, unknown][] = [
    ['/admin/users/create', { customerKey, username: 'alice', email: 'alice@example.test', firstName: 'Alice', lastName: 'A', password: 'a long enough password 1' }],
    ['/admin/users/create', { customerKey, username: 'bob', email: 'bob@example.test', firstName: 'Bob', lastName: 'B' }],
    ['/admin/groups/update', { customerKey, groups: [{ groupName: 'team', isDefault: 'false' }] }],
    ['/admin/groups/members/update', { customerKey, groupName: 'team', users: [{ primaryEmail: 'alice@example.test' }] }],
  ];
  for (const [path, body] of writes) {
    const response = await app.admin.post(path, body);
    assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
  }
}

/** What a bad request must leave as it was: the count, the users, the groups and memberships. */
async function snapshot(app: TestApp): Promise<Record<string, string>> {
  const page = { customerKey: app.customer.customerKey, batchSize: 500, batchNo: 1 };
  const count = await app.admin.get('/admin/users/stats/count');
  const users = await app.admin.post('/admin/users/getall', page);
  const groups = await app.admin.post('/admin/groups/getall', page);
  const members = await app.admin.post('/admin/groups/members', page);
  for (const r of [count, users, groups, members]) assert.equal(r.statusCode, 200, r.body);
  return { count: count.body, users: users.body, groups: groups.body, members: members.body };
}

async function setUp(t: Parameters<typeof build>[0], kind: Parameters<typeof build>[1]) {
  const app = await build(t, kind);
  await seed(app);
  const routes = adminRoutes(app);
  assert.ok(routes.length >= 28, `only ${routes.length} admin routes found`);
  return { app, routes, before: await snapshot(app) };
}

function send(app: TestApp, route: Route, attempt: Attempt): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...app.admin.headers() };
  if (attempt.contentType !== undefined) headers['content-type'] = attempt.contentType;
  return app.identity.inject({ method: route.method, url: route.url, headers, payload: attempt.payload });
}

// ---------------------------------------------------------------------------------------------
// What every answer to bad input must look like.

/** Signs of an internal detail on the wire: stack frames, file paths, driver names. */
const LEAK = /\n\s+at |\bat \S+ \(|node_modules|\/src\/|\.ts:\d+|\.js:\d+|SQLITE_|sqlite3|postgres|kysely|FST_ERR/i;

function describeAttempt(route: Route, attempt: Attempt): string {
  const payload = attempt.payload.length > 200 ? `${attempt.payload.slice(0, 200)}… (${attempt.payload.length} chars)` : attempt.payload;
  return `${route.method} ${route.url} [${attempt.contentType ?? 'no content-type'}] ${JSON.stringify(payload)}`;
}

function assertRefused(route: Route, attempt: Attempt, response: LightMyRequestResponse): void {
  const where = `${describeAttempt(route, attempt)} → ${response.statusCode} ${response.body.slice(0, 300)}`;
  const status = response.statusCode;
  assert.ok(status >= 400 && status < 500, `not a 4xx: ${where}`);
  assert.ok(!LEAK.test(response.body), `internal detail in the body: ${where}`);
  assert.ok(response.body.length <= 400, `body echoes too much: ${where}`);
  assert.match(String(response.headers['x-request-id']), /\S/, where);

  const type = String(response.headers['content-type'] ?? '');
  if (type.startsWith('text/plain')) {
    if (route.url.endsWith('/admin/users/delete')) {
      // Spec: an incorrect body on delete answers like an unknown user.
      assert.equal(status, 403, where);
      assert.equal(response.body, NOT_AUTHORISED, where);
      return;
    }
    // Otherwise only disable/enable answer in plain text, and only for a customerKey mismatch.
    assert.ok(/\/admin\/users\/(disable|enable)$/.test(route.url), where);
    assert.equal(status, 400, where);
    assert.equal(response.body, `API Authorization: ${DENIED}`, where);
    return;
  }
  assert.match(type, /^application\/json/, where);
  const body = response.json() as Record<string, unknown>;
  if (route.url.endsWith('/admin/users/change-password')) {
    if (status === 401) return assert.deepEqual(body, { status: 'error', code: '401', message: DENIED }, where);
    if ('customerId' in body) {
      // The route's own error body (spec, change-password errors).
      assert.deepEqual(Object.keys(body).sort(), ['customerId', 'message', 'status'], where);
      assert.equal(typeof body.customerId, 'number', where);
      assert.equal(body.status, 'ERROR', where);
      assert.equal(status, 400, where);
      assert.equal(typeof body.message, 'string', where);
      return;
    }
  }
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], where);
  assert.equal(body.status, 'ERROR', where);
  assert.equal(body.code, String(status), where);
  assert.equal(typeof body.message, 'string', where);
  assert.ok((body.message as string).length > 0, where);
  if (status === 401) assert.equal(body.message, DENIED, where);
}

/** Sends `attempt`; the route must refuse it (the body-less count may answer it) and nothing may change. */
async function check(app: TestApp, before: Record<string, string>, route: Route, attempt: Attempt): Promise<LightMyRequestResponse> {
  const response = await send(app, route, attempt);
  if (route.method === 'GET' && response.statusCode === 200) {
    // GET /admin/users/stats/count takes no body: it ignores whatever was sent.
    assert.deepEqual(response.json(), JSON.parse(before.count), describeAttempt(route, attempt));
  } else {
    assertRefused(route, attempt, response);
  }
  assert.deepEqual(await snapshot(app), before, `state changed after ${describeAttempt(route, attempt)}`);
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was polluted');
  return response;
}

// ---------------------------------------------------------------------------------------------
// Bodies: plausible ones (the right keys with sensible values) and ways to spoil them.

const KNOWN: Record<string, unknown> = {
  username: 'fuzz.target', email: 'fuzz@example.test', primaryEmail: 'alice@example.test',
  firstName: 'Fuzz', lastName: 'Target', password: 'a fuzzing password 1', oldPassword: 'a long enough password 1',
  batchSize: 10, batchNo: 1, groupName: 'team', otpToken: '123456', secret: 'JBSWY3DPEHPK3PXP',
};

function plausible(schema: JsonSchema, name?: string): unknown {
  if (name !== undefined && name in KNOWN) return KNOWN[name];
  if (schema.enum) return schema.enum[0];
  const s = schema.anyOf?.[0] ?? schema.oneOf?.[0] ?? schema;
  switch ([s.type].flat()[0]) {
    case 'integer': case 'number': return Math.max(1, s.minimum ?? 1);
    case 'boolean': return false;
    case 'array': return s.items ? [plausible(s.items)] : [];
    case 'object': return Object.fromEntries((s.required ?? []).map((k) => [k, plausible(s.properties?.[k] ?? {}, k)]));
    default: return s.enum?.[0] ?? 'fuzz';
  }
}

function plausibleBody(app: TestApp, route: Route, keyAsString: boolean): Record<string, unknown> {
  const body = route.schema ? plausible(route.schema) as Record<string, unknown> : {};
  return { ...body, customerKey: keyAsString ? app.customer.customerKey : Number(app.customer.customerKey) };
}

const requiredFields = (route: Route) => (route.schema?.required ?? []).filter((k) => k !== 'customerKey');

function allowedTypes(schema: JsonSchema | undefined): Set<string> | undefined {
  if (!schema) return undefined;
  const branches = schema.anyOf ?? schema.oneOf ?? [schema];
  const types = new Set<string>();
  for (const b of branches) {
    if (b.type === undefined) return undefined;
    for (const t of [b.type].flat()) types.add(t);
  }
  return types;
}

const smallJson = fc.jsonValue({ maxDepth: 2 });

/** A value of a JSON type the schema does not allow, or null (absent, for a required field). */
function wrongValue(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const allowed = allowedTypes(schema);
  if (!allowed) return fc.constant(null);
  const options: fc.Arbitrary<unknown>[] = [fc.constant(null)];
  if (!allowed.has('string')) options.push(fc.string({ maxLength: 20 }));
  if (!allowed.has('integer') && !allowed.has('number')) options.push(fc.integer());
  if (!allowed.has('number')) options.push(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }).filter((n) => !Number.isInteger(n)));
  if (!allowed.has('boolean')) options.push(fc.boolean());
  if (!allowed.has('array')) options.push(fc.array(smallJson, { maxLength: 3 }));
  if (!allowed.has('object')) options.push(fc.dictionary(fc.string({ maxLength: 8 }), smallJson, { maxKeys: 3 }));
  return fc.oneof(...options);
}

const keyForm = fc.boolean();
const json = (contentType = 'application/json') => (value: unknown): Attempt => ({ contentType, payload: JSON.stringify(value) });

/** Random JSON: anything but an object, or an object that lacks a required field. */
function randomJson(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const notObject = fc.jsonValue().filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)).map(json());
  const required = requiredFields(route);
  if (required.length === 0) return notObject;
  const lacking = fc.tuple(keyForm, fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }))
    .map(([asString, extra]) => ({ ...extra, customerKey: plausibleBody(app, route, asString).customerKey }))
    .filter((body) => required.some((k) => !Object.hasOwn(body, k) || (body as Record<string, unknown>)[k] === null))
    .map(json());
  return fc.oneof(notObject, lacking);
}

/** The right keys, with at least one required field of a wrong type. */
function wrongTypes(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const required = requiredFields(route);
  if (required.length === 0) return randomJson(app, route);
  return fc.tuple(keyForm, fc.subarray(required, { minLength: 1 })).chain(([asString, fields]) =>
    fc.tuple(...fields.map((f) => wrongValue(route.schema?.properties?.[f]))).map((values) => {
      const body = plausibleBody(app, route, asString);
      fields.forEach((f, i) => { body[f] = values[i]; });
      return json()(body);
    }));
}

/** Every required field a huge string (past every maxLength; the biggest pass the body limit). */
function hugeStrings(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const required = requiredFields(route);
  if (required.length === 0) return randomJson(app, route);
  return fc.tuple(keyForm, fc.integer({ min: 1_100, max: 150_000 }), fc.constantFrom('a', 'é', '😀', 'a b', '<script>'))
    .map(([asString, length, unit]) => {
      const body = plausibleBody(app, route, asString);
      for (const f of required) body[f] = unit.repeat(Math.ceil(length / unit.length));
      return json()(body);
    });
}

/** Arrays or objects nested past the limit, in a required field or an extra one. */
function deepNesting(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const fields = [...requiredFields(route), 'extra'];
  return fc.tuple(keyForm, fc.constantFrom(...fields), fc.integer({ min: 33, max: 30_000 }), fc.constantFrom('array', 'object', 'mixed'))
    .map(([asString, field, depth, shape]) => {
      const body = plausibleBody(app, route, asString);
      body[field] = '__DEEP__';
      const open = shape === 'array' ? '[' : shape === 'object' ? '{"a":' : '[{"a":';
      const close = shape === 'array' ? ']' : shape === 'object' ? '}' : '}]';
      const levels = shape === 'mixed' ? Math.ceil(depth / 2) : depth;
      return { contentType: 'application/json', payload: JSON.stringify(body).replace('"__DEEP__"', `${open.repeat(levels)}1${close.repeat(levels)}`) };
    });
}

const PROTO_MEMBERS = [
  '"__proto__":{"polluted":true}',
  '"__proto__":null',
  '"\\u005f_proto__":{"polluted":true}',
  '"__pro\\u0074o__":{"polluted":true}',
  '"constructor":{"prototype":{"polluted":true}}',
  '"constructor":{"prototype":null}',
  '"constructor":{"\\u0070rototype":{"polluted":true}}',
];

/** `__proto__` and `constructor.prototype` members, plain or escaped, at the top or nested. */
function protoKeys(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  return fc.tuple(keyForm, fc.constantFrom(...PROTO_MEMBERS), fc.constantFrom('top', 'nested', 'array'))
    .map(([asString, member, where]) => {
      const text = JSON.stringify({ ...plausibleBody(app, route, asString), extra: '__HERE__' });
      const injected = where === 'top' ? text.replace(/}$/, `,${member}}`)
        : where === 'nested' ? text.replace('"__HERE__"', `{"a":1,${member}}`)
          : text.replace('"__HERE__"', `[{${member}}]`);
      return { contentType: 'application/json', payload: injected };
    });
}

const CONTROL = fc.oneof(
  fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  fc.constantFrom('\u007f', '\ud800', '\udfff', '\udc00x', 'x\ud83d'),
);

/** A control character or a lone surrogate in a field value, an extra value or a key. */
function controlChars(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const stringFields = [...requiredFields(route).filter((f) => allowedTypes(route.schema?.properties?.[f])?.has('string')), 'note'];
  return fc.tuple(keyForm, fc.constantFrom(...stringFields), CONTROL, fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), fc.boolean())
    .map(([asString, field, bad, before, after, inKey]) => {
      const body = plausibleBody(app, route, asString);
      if (inKey) body[`${before}${bad}${after}`] = 'value';
      else body[field] = `${before}${bad}${after}`;
      return json()(body);
    });
}

const BROKEN_JSON = [
  '', ' ', '{', '}', '{"customerKey":', "{'customerKey': 1}", '{"customerKey":1,}', '{"a":1}{"b":2}', 'NaN', 'undefined',
  '{"a":01}', '[1,]', '{"a" 1}', '{"a":1e}', '{"a":"\\x41"}', '{"a":"unterminated}', '\u0000', '{"a":tru}', '{,}', '"\\ud800', '--',
];

/** Text that is not JSON: random strings, truncated bodies, classic near-misses. */
function malformedJson(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  const isJson = (text: string) => { try { JSON.parse(text); return true; } catch { return false; } };
  const full = JSON.stringify(plausibleBody(app, route, false));
  return fc.oneof(
    fc.string({ unit: 'binary', maxLength: 60 }).filter((s) => !isJson(s)),
    fc.integer({ min: 0, max: full.length - 1 }).map((i) => full.slice(0, i)).filter((s) => !isJson(s)),
    fc.constantFrom(...BROKEN_JSON),
  ).map((payload) => ({ contentType: 'application/json', payload }));
}

const WRONG_TYPES = [
  'text/plain', 'text/plain; charset=utf-8', 'text/html', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=----x',
  'application/xml', 'application/octet-stream', 'application/jsonx', 'application/vnd.api+json', 'text/json', 'image/png',
];

/** A plausible (maybe valid) JSON body sent as something else, or with no content type at all. */
function wrongContentType(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  return fc.tuple(keyForm, fc.oneof(
    fc.constantFrom<string | undefined>(...WRONG_TYPES, undefined),
    fc.stringMatching(/^[a-z]{1,10}\/[a-z.+-]{1,12}$/).filter((t) => t !== 'application/json'),
  )).map(([asString, contentType]) => ({ contentType, payload: JSON.stringify(plausibleBody(app, route, asString)) }));
}

/** A plausible body padded past the body limit. */
function oversized(app: TestApp, route: Route): fc.Arbitrary<Attempt> {
  return fc.tuple(keyForm, fc.integer({ min: 1, max: 200_000 })).map(([asString, extra]) => {
    const base = JSON.stringify({ ...plausibleBody(app, route, asString), padding: '' });
    return { contentType: 'application/json', payload: base.replace('"padding":""', `"padding":"${'x'.repeat(BODY_LIMIT - base.length + extra + 1)}"`) };
  });
}

const CATEGORIES: [string, (app: TestApp, route: Route) => fc.Arbitrary<Attempt>, number | undefined][] = [
  ['random JSON values', randomJson, undefined],
  ['the right keys with wrong types', wrongTypes, undefined],
  ['huge strings', hugeStrings, undefined],
  ['deep nesting', deepNesting, undefined],
  ['__proto__ and constructor.prototype keys', protoKeys, 400],
  ['control characters and lone surrogates', controlChars, undefined],
  ['malformed JSON text', malformedJson, 400],
  ['wrong content types', wrongContentType, 415],
  ['bodies over the limit', oversized, 413],
];

describeEachStore('bad input at every admin route', (kind) => {
  for (const [name, category, expectedStatus] of CATEGORIES) {
    test(`property: ${name}`, async (t) => {
      const { app, routes, before } = await setUp(t, kind);
      const attempts = fc.constantFrom(...routes).chain((route) => category(app, route).map((attempt) => ({ route, attempt })));
      await fc.assert(fc.asyncProperty(attempts, async ({ route, attempt }) => {
        const response = await check(app, before, route, attempt);
        if (expectedStatus !== undefined && route.method === 'POST') {
          // delete answers its body errors with the spec's 403 (see assertRefused).
          const expected = expectedStatus === 400 && route.url.endsWith('/admin/users/delete') ? 403 : expectedStatus;
          assert.equal(response.statusCode, expected, describeAttempt(route, attempt));
        }
      }), { numRuns: RUNS });
    });
  }

  // Focused examples, one or more per category, with their exact bodies.

  async function example(t: Parameters<typeof build>[0], path: string, attempt: (app: TestApp) => Attempt) {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === path);
    assert.ok(route, path);
    return check(app, before, route, attempt(app));
  }
  const error = (status: number, message: string) => ({ status: 'ERROR', code: String(status), message });

  test('a body that is not an object is a 400', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/api/admin/groups/getall')!;
    for (const payload of ['[]', '"text"', '42', 'true', 'null', `[{"customerKey":${app.customer.customerKey}}]`]) {
      const response = await check(app, before, route, { contentType: 'application/json', payload });
      assert.equal(response.statusCode, 400, payload);
      assert.deepEqual(response.json(), error(400, 'body must be object'), payload);
    }
  });

  test('wrong types are 400s naming the field, never coerced', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const customerKey = app.customer.customerKey;
    const cases: [string, unknown, string][] = [
      ['/api/admin/users/getall', { customerKey, batchSize: '10', batchNo: 1 }, 'batchSize must be integer'],
      ['/api/admin/users/getall', { customerKey, batchSize: 10, batchNo: 1.5 }, 'batchNo must be integer'],
      ['/moas/api/admin/users/create', { customerKey, username: 42, email: 'x@example.test', firstName: 'X', lastName: 'Y' }, 'username must be string'],
      ['/api/admin/users/create', { customerKey, username: null, email: 'x@example.test', firstName: 'X', lastName: 'Y' }, 'username is required'],
      ['/api/admin/groups/update', { customerKey, groups: { groupName: 'x', isDefault: 'false' } }, 'groups must be array'],
      ['/api/admin/users/get', { customerKey: true, username: 'alice' }, 'customerKey must be integer'],
    ];
    for (const [path, body, message] of cases) {
      const response = await check(app, before, routes.find((r) => r.url === path)!, json()(body));
      assert.equal(response.statusCode, 400, path);
      assert.deepEqual(response.json(), error(400, message), `${path} ${JSON.stringify(body)}`);
    }
  });

  test('on delete, an incorrect body answers the spec\'s 403 plain text; 413 and 415 stay', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/moas/api/admin/users/delete')!;
    const customerKey = app.customer.customerKey;
    for (const attempt of [json()({ customerKey }), json()({ customerKey, username: 7 }), json()({ customerKey, username: 'al\u0000ice' }),
      { contentType: 'application/json', payload: '{"customerKey":' }, json()([customerKey])]) {
      const response = await check(app, before, route, attempt);
      assert.equal(response.statusCode, 403, attempt.payload);
      assert.match(String(response.headers['content-type']), /^text\/plain/);
      assert.equal(response.body, NOT_AUTHORISED, attempt.payload);
    }
    const unsupported = await check(app, before, route, { contentType: 'text/plain', payload: JSON.stringify({ customerKey, username: 'alice' }) });
    assert.equal(unsupported.statusCode, 415);
    const big = await check(app, before, route, json()({ customerKey, username: 'alice', padding: 'x'.repeat(BODY_LIMIT) }));
    assert.equal(big.statusCode, 413);
  });

  test('a huge string is refused by its length', async (t) => {
    const response = await example(t, '/api/admin/users/create', (app) => json()({
      customerKey: app.customer.customerKey, username: 'a'.repeat(10_000), email: 'huge@example.test', firstName: 'H', lastName: 'S',
    }));
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), error(400, 'username must NOT have more than 100 characters'));
  });

  test('deep nesting is a 400, at any depth the body limit allows', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/api/admin/users/get')!;
    for (const depth of [33, 1_000, 100_000]) {
      const payload = `{"customerKey":${app.customer.customerKey},"username":"alice","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const response = await check(app, before, route, { contentType: 'application/json', payload });
      assert.equal(response.statusCode, 400, String(depth));
      assert.match(response.json().message, /^extra[[\]0]+…? must not nest deeper than 32 levels$/);
    }
    // 31 levels below the field is allowed by the depth rule (the schema still decides).
    const payload = `{"customerKey":${app.customer.customerKey},"username":"alice","extra":${'['.repeat(31)}${']'.repeat(31)}}`;
    const ok = await send(app, route, { contentType: 'application/json', payload });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('__proto__ and constructor.prototype keys are refused as invalid JSON and pollute nothing', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/api/admin/users/update')!;
    for (const member of PROTO_MEMBERS) {
      const payload = `{"customerKey":${app.customer.customerKey},"username":"alice","firstName":"Mallory",${member}}`;
      const response = await check(app, before, route, { contentType: 'application/json', payload });
      assert.equal(response.statusCode, 400, member);
      assert.deepEqual(response.json(), error(400, 'request body is not valid JSON'), member);
    }
  });

  test('control characters and lone surrogates are refused, in values and in keys', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const customerKey = app.customer.customerKey;
    const create = routes.find((r) => r.url === '/api/admin/users/create')!;
    const user = { customerKey, username: 'carol', email: 'carol@example.test', firstName: 'Carol', lastName: 'C' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...user, firstName: 'Ca\u0000rol' }, 'firstName must not contain control characters'],
      [{ ...user, lastName: 'line\nbreak' }, 'lastName must not contain control characters'],
      [{ ...user, customAttribute1: '\u001b[31mred' }, 'customAttribute1 must not contain control characters'],
      [{ ...user, groups: [{ name: 'team', attributes: [{ name: 'a', value: 'b\u007f' }] }] }, 'groups[0].attributes[0].value must not contain control characters'],
      [{ ...user, 'bad\u0007key': 'x' }, 'bad\u0007key must not contain control characters'],
      [{ ...user, username: 'carol\ud800' }, 'username must be valid Unicode text'],
    ];
    for (const [body, message] of cases) {
      const response = await check(app, before, create, json()(body));
      assert.equal(response.statusCode, 400, message);
      assert.deepEqual(response.json(), error(400, message));
    }
    // A well-formed astral character (a surrogate pair) is fine.
    const ok = await app.admin.post('/admin/users/create', { ...user, firstName: 'Carol 😀' });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('malformed JSON and an empty body are 400s', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/moas/api/admin/users/disable')!;
    for (const payload of BROKEN_JSON) {
      const response = await check(app, before, route, { contentType: 'application/json', payload });
      assert.equal(response.statusCode, 400, JSON.stringify(payload));
      const message = payload === '' ? 'request body is empty' : /^\s*$/.test(payload) ? response.json().message : 'request body is not valid JSON';
      assert.deepEqual(response.json(), error(400, message), JSON.stringify(payload));
    }
  });

  test('a valid body under another content type is a 415 and creates nothing', async (t) => {
    const { app, routes, before } = await setUp(t, kind);
    const route = routes.find((r) => r.url === '/api/admin/users/create')!;
    const payload = JSON.stringify({ customerKey: app.customer.customerKey, username: 'dave', email: 'dave@example.test', firstName: 'D', lastName: 'D' });
    for (const contentType of [...WRONG_TYPES, undefined]) {
      const response = await check(app, before, route, { contentType, payload });
      assert.equal(response.statusCode, 415, String(contentType));
      assert.deepEqual(response.json(), error(415, 'Content-Type must be application/json'), String(contentType));
    }
    // The same body as JSON is accepted: the refusals were about the content type.
    const ok = await send(app, route, { contentType: 'application/json', payload });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('a body over the limit is a 413', async (t) => {
    const response = await example(t, '/api/admin/groups/update', (app) => json()({
      customerKey: app.customer.customerKey, groups: [{ groupName: 'big', isDefault: 'false', groupAttribute1: 'x'.repeat(BODY_LIMIT) }],
    }));
    assert.equal(response.statusCode, 413);
    assert.deepEqual(response.json(), error(413, 'request body is too large'));
  });

  test('a malformed URL and an unknown admin path get the standard body', async (t) => {
    const { app } = await setUp(t, kind);
    const bad = await app.identity.inject({ method: 'POST', url: '/api/admin/users/%E0%A4%A', headers: { ...app.admin.headers(), 'content-type': 'application/json' }, payload: '{}' });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json(), error(400, 'request URL is not valid'));
    assert.match(String(bad.headers['x-request-id']), /\S/);
    const unknown = await app.admin.post('/admin/users/nope', {});
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), error(404, 'Route POST /api/admin/users/nope not found'));
  });
});
