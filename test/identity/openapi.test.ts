/**
 * The identity service's OpenAPI document (/api/openapi.json): the server it is served from, and
 * every admin operation's error responses with their bodies, in the shapes of identity/errors.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { build } from '../helpers/app.ts';

type Media = Record<string, { schema?: Record<string, unknown> }>;
type Operation = { responses: Record<string, { content?: Media; headers?: Record<string, unknown> }> };

const STANDARD = ['status', 'code', 'message'];
const required = (schema: Record<string, unknown> | undefined) => (schema?.required as string[] | undefined) ?? [];
const shapes = (schema: Record<string, unknown> | undefined) => ((schema?.oneOf as Record<string, unknown>[] | undefined) ?? [schema]).map(required);

test('the identity document names its public URL, documents every admin operation\'s error responses with their bodies, and validates', async (t) => {
  const publicUrl = 'https://id.example.test/latchkey';
  const app = await build(t, 'sqlite', { LATCHKEY_PUBLIC_URL: publicUrl });
  const response = await app.identity.inject({ method: 'GET', url: '/api/openapi.json' });
  assert.equal(response.statusCode, 200);
  const doc = response.json();
  assert.deepEqual(doc.servers, [{ url: publicUrl }]);

  const result = await validate(structuredClone(doc));
  assert.ok(result.valid, compileErrors(result));

  const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>)
    .filter(([path]) => path.startsWith('/api/'))
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, method, op })));
  assert.ok(operations.length >= 14);
  for (const { where, method, op } of operations) {
    const errors = Object.entries(op.responses).filter(([status]) => /^[45]\d\d$/.test(status));
    assert.ok(errors.some(([status]) => status.startsWith('4')), `${where}: no 4xx`);
    for (const [status, documented] of errors) {
      const media = Object.values(documented.content ?? {});
      assert.ok(media.length > 0 && media.every((m) => m.schema), `${where} ${status}: no body schema`);
    }
    for (const status of ['429', '500', '503']) assert.ok(op.responses[status], `${where}: no ${status}`);
    for (const status of ['429', '503']) assert.ok(op.responses[status].headers?.['retry-after'], `${where}: ${status} without Retry-After`);
    if (method === 'post') for (const status of ['413', '415']) assert.ok(op.responses[status], `${where}: no ${status}`);
  }

  const op = (path: string, method = 'post') => doc.paths[path][method] as Operation;
  const json = (path: string, status: string, method = 'post') => op(path, method).responses[status].content?.['application/json']?.schema;
  // Standard routes: the standard body for every error.
  for (const status of ['400', '401', '404', '409', '413', '415', '429', '500', '503']) {
    assert.deepEqual(shapes(json('/api/admin/users/create', status)), [STANDARD], `create ${status}`);
  }
  assert.deepEqual(Object.keys(op('/api/admin/users/stats/count', 'get').responses).sort(), ['200', '400', '401', '404', '429', '500', '503']);
  // get-user's 404 names the username.
  assert.deepEqual(shapes(json('/api/admin/users/get', '404')), [['username', 'status', 'message']]);
  // users/sessions/revoke: an unknown user as users/get; the rest standard; its body's fields documented.
  assert.deepEqual(shapes(json('/api/admin/users/sessions/revoke', '404')), [['username', 'status', 'message']]);
  assert.deepEqual(shapes(json('/api/admin/users/sessions/revoke', '400')), [STANDARD]);
  assert.deepEqual(Object.keys((doc.paths['/api/admin/users/sessions/revoke'].post.requestBody.content['application/json'].schema as { properties: object }).properties), ['customerKey', 'username']);
  // disable/enable: a wrong signature is a text 400, an unknown user a text 403; no 401.
  for (const path of ['/api/admin/users/disable', '/api/admin/users/enable']) {
    const responses = op(path).responses;
    assert.deepEqual(Object.keys(responses['400'].content!).sort(), ['application/json', 'text/plain']);
    assert.deepEqual(Object.keys(responses['403'].content!), ['text/plain']);
    assert.equal(responses['401'], undefined);
  }
  // delete: every refusal of the request is the text 403.
  assert.deepEqual(Object.keys(op('/api/admin/users/delete').responses['403'].content!), ['text/plain']);
  assert.equal(op('/api/admin/users/delete').responses['400'], undefined);
  // change-password: its own 400 body (customerId) or the standard one for a malformed request.
  assert.deepEqual(shapes(json('/api/admin/users/change-password', '400')), [['customerId', 'status', 'message'], STANDARD]);
  assert.deepEqual(shapes(json('/api/admin/users/change-password', '401')), [STANDARD]);
});
