import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildSite } from './helpers.ts';

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
