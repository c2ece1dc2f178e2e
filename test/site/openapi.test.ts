import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { buildSite } from './helpers.ts';

type Operation = { security?: unknown; requestBody?: { content: Record<string, { schema?: unknown }> }; responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }>; headers?: Record<string, unknown> }> };

const SITE_ERROR_KEYS = ['status', 'error', 'code', 'error_description'];

test('the site OpenAPI 3.1 document lists every site route and needs a credential like the rest', async (t) => {
  const site = await buildSite(t);

  const anonymous = await site.get('/openapi.json');
  assert.equal(anonymous.statusCode, 401);
  assert.equal(anonymous.json().error, 'MISSING_AUTHORIZATION_HEADER');

  const response = await site.get('/openapi.json', { authorization: `Bearer ${await site.defaultKey()}` });
  assert.equal(response.statusCode, 200);
  const doc = response.json();
  assert.equal(doc.openapi, '3.1.0');
  for (const path of [
    '/cms-json/api/v1/token', '/cms-json/cms/v2/posts', '/cms-json/cms/v2/posts/{id}', '/.well-known/jwks.json',
    '/rest/api/2/myself', '/rest/api/2/tokens', '/rest/api/2/tokens/{id}', '/rest/api/2/tokens/expired',
  ]) assert.ok(doc.paths[path], `${path} is documented`);
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['accessToken', 'basic', 'bearer', 'idToken']);
  // The two open routes say so; the others inherit the document's credential requirement.
  assert.deepEqual(doc.paths['/cms-json/api/v1/token'].post.security, []);
  assert.deepEqual(doc.paths['/.well-known/jwks.json'].get.security, []);
  assert.equal(doc.paths['/cms-json/cms/v2/posts'].get.security, undefined);
  assert.equal(doc.paths['/openapi.json'], undefined, 'the document does not list itself');
});

test('the site document names the site URL it is served from, documents every error response with its body, and validates', async (t) => {
  const siteUrl = 'https://cms.example.test/prefix';
  const site = await buildSite(t, 'sqlite', { env: { LATCHKEY_SITE_URL: siteUrl } });
  const doc = (await site.get('/openapi.json', { authorization: `Bearer ${await site.defaultKey()}` })).json();
  assert.deepEqual(doc.servers, [{ url: siteUrl }]);

  const result = await validate(structuredClone(doc));
  assert.ok(result.valid, compileErrors(result));

  const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, path, op })));
  assert.ok(operations.length >= 15);
  for (const { where, path, op } of operations) {
    const errors = Object.entries(op.responses).filter(([status]) => /^[45]\d\d$/.test(status));
    assert.ok(errors.some(([status]) => status.startsWith('4')), `${where}: no 4xx`);
    assert.ok(errors.some(([status]) => status === '500'), `${where}: no 500`);
    assert.ok(op.responses['503']?.headers?.['retry-after'], `${where}: no 503 with Retry-After`);
    for (const [status, documented] of errors) {
      const schema = documented.content?.['application/json']?.schema;
      assert.ok(schema, `${where} ${status}: no JSON body schema`);
      const shapes = (schema.oneOf as Record<string, unknown>[] | undefined) ?? [schema];
      assert.ok(shapes.some((shape) => JSON.stringify((shape.required as string[] | undefined) ?? []) === JSON.stringify(SITE_ERROR_KEYS)),
        `${where} ${status}: not the site error body`);
    }
    // Protected routes are refused without a credential; /rest/api/2/* may answer in the API-token body.
    if (op.security === undefined || path.startsWith('/rest/api/2/')) assert.ok(op.responses['401'], `${where}: no 401`);
    if (path.startsWith('/rest/api/2/')) {
      const shapes = op.responses['401'].content!['application/json'].schema!.oneOf as { required: string[] }[];
      assert.deepEqual(shapes.map((shape) => shape.required), [SITE_ERROR_KEYS, ['error']], `${where}: the API-token body`);
    }
  }
  const posts = doc.paths['/cms-json/cms/v2/posts'].post as Operation;
  for (const status of ['400', '401', '403', '409', '413', '415', '429', '500', '503']) assert.ok(posts.responses[status], `POST posts: ${status}`);
  assert.ok(doc.paths['/cms-json/cms/v2/posts/{id}'].get.responses['404'], 'a path parameter can name nothing');

  // The token endpoint: its three body forms, and its refusals.
  const token = doc.paths['/cms-json/api/v1/token'].post as Operation;
  assert.deepEqual(Object.keys(token.requestBody!.content).sort(), ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data']);
  for (const media of Object.values(token.requestBody!.content)) {
    assert.deepEqual((media.schema as { required: string[] }).required, ['username', 'password']);
    assert.deepEqual(Object.keys((media.schema as { properties: object }).properties), ['username', 'password', 'otp']);
  }
  assert.deepEqual(Object.keys(token.responses).sort(), ['200', '400', '413', '415', '429', '500', '503']);
});
