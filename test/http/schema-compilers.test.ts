/**
 * The faces compile a route's schemas when the route is first used (src/http/schema-compilers.ts):
 * requests are validated and answers serialised exactly as with Fastify's default compilers, the
 * first request included, and a headers schema Fastify would not lowercase is refused when added.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createHttpApp } from '../../src/http/app.ts';

function app() {
  const built = createHttpApp({ logLevel: 'silent' });
  built.post('/items', {
    schema: {
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', maxLength: 5 }, size: { type: 'integer', default: 1 } } },
      response: { 200: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' } } } },
    },
  }, async (request) => ({ ...(request.body as object), secret: 'never serialised' }));
  return built;
}

test('the first request of a route is validated and its answer serialised by its schemas, and every request after it', async (t) => {
  const server = app();
  t.after(() => server.close());
  for (let round = 0; round < 2; round++) {
    const tooLong = await server.inject({ method: 'POST', url: '/items', payload: { name: 'toolong' } });
    assert.equal(tooLong.statusCode, 400, `round ${round}`);
    assert.match(tooLong.json().message, /body\/name must NOT have more than 5 characters/);
    const missing = await server.inject({ method: 'POST', url: '/items', payload: { size: 2 } });
    assert.equal(missing.statusCode, 400);
    assert.match(missing.json().message, /must have required property 'name'/);
    // The default applies, and the response schema drops what it does not list.
    const ok = await server.inject({ method: 'POST', url: '/items', payload: { name: 'cup' } });
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { name: 'cup', size: 1 });
  }
});

test('a headers schema naming a header with capitals is refused when the app starts', async (t) => {
  const server = createHttpApp({ logLevel: 'silent' });
  t.after(() => server.close());
  server.get('/h', { schema: { headers: { type: 'object', required: ['X-Api-Version'], properties: { 'X-Api-Version': { type: 'string' } } } } }, async () => ({}));
  await assert.rejects(async () => { await server.ready(); }, /write the header "X-Api-Version" of its headers schema in lowercase/);
});

test('a headers schema in lowercase validates the request headers', async (t) => {
  const server = createHttpApp({ logLevel: 'silent' });
  t.after(() => server.close());
  server.get('/h', { schema: { headers: { type: 'object', required: ['x-api-version'], properties: { 'x-api-version': { type: 'string', enum: ['2'] } } } } }, async () => ({ ok: true }));
  assert.equal((await server.inject({ method: 'GET', url: '/h', headers: { 'X-Api-Version': '2' } })).statusCode, 200);
  assert.equal((await server.inject({ method: 'GET', url: '/h', headers: { 'X-Api-Version': '3' } })).statusCode, 400);
  assert.equal((await server.inject({ method: 'GET', url: '/h' })).statusCode, 400);
});
