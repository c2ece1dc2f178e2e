/**
 * Bytes no route should take (issue 13 items 6 and 7), on both faces and both stores: a malformed
 * multipart body on the open token endpoint, a NUL in any string field, invalid UTF-8 in a JSON or
 * form body. Each is a 400 in the face's shape naming the field, never a 500, and nothing is stored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, bearer, buildSite, POSTS_PATH, siteError, TOKEN_PATH, type SiteTest } from '../site/helpers.ts';

if (postgresUrl) await postgresStore();

const KEYS_PATH = '/cms-json/api/v1/api-keys';
const TOKENS_PATH = '/rest/api/2/tokens';
const FF = Buffer.from([0xff]);
const json = { 'content-type': 'application/json' };

/** A text with raw bytes spliced in where `~` stands. */
const withBytes = (text: string, bytes: Buffer = FF): Buffer => {
  const [before, after] = text.split('~');
  return Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)]);
};

function multipart(boundary: string, fields: Record<string, string | Buffer>): Buffer {
  const parts = Object.entries(fields).map(([name, value]) => Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n'),
  ]));
  return Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]);
}

const bad = (field: string, rule: string) => siteError(400, 'BAD_REQUEST', `${field} ${rule}`);
const admin400 = (message: string) => ({ status: 'ERROR', code: '400', message });

async function editor(s: SiteTest): Promise<string> {
  await s.addUser('editor', { groups: ['editors'] });
  return s.token('editor');
}

describeEachStore('bad bytes', (kind) => {
  test('a malformed multipart body on the token endpoint is 400 in the site shape (item 6)', async (t) => {
    const s = await buildSite(t, kind);
    await s.addUser('alice');
    const malformed = bad('multipart body', 'is malformed');
    const cases: [string, string | Buffer, Record<string, unknown>][] = [
      // These answered 500 before: busboy's own errors.
      ['multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="username"\r\n\r\nalice', malformed],
      ['multipart/form-data', 'garbage', malformed],
      ['multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="username"\r\n\r\nalice\r\n--XX', malformed],
      // busboy reads these as a form without fields.
      ['multipart/form-data; boundary=XX', 'garbage', malformed],
      ['multipart/form-data; boundary=XX', '', bad('username', 'is required')],
    ];
    for (const [type, payload, body] of cases) {
      const res = await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': type }, payload });
      assertJson(res, 400, body);
      assert.equal(res.headers['cache-control'], 'no-store');
    }
    // A well-formed one still works.
    const ok = await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'multipart/form-data; boundary=XX' },
      payload: multipart('XX', { username: 'alice', password: 'violet-otter-harbour-42' }) });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('a NUL in a string field of any site route is 400 naming the field (item 7)', async (t) => {
    const s = await buildSite(t, kind);
    const jwt = await editor(s);
    const cases: [string, string, string | Buffer, Record<string, string>, Record<string, unknown>][] = [
      ['POST', TOKEN_PATH, JSON.stringify({ username: 'editor', password: 'pass\u0000word' }), json, bad('password', 'must not contain control characters')],
      ['POST', TOKEN_PATH, 'username=editor&password=a%00b', { 'content-type': 'application/x-www-form-urlencoded' }, bad('password', 'must not contain control characters')],
      ['POST', TOKEN_PATH, multipart('XX', { username: 'editor', password: 'a\u0000b' }), { 'content-type': 'multipart/form-data; boundary=XX' }, bad('password', 'must not contain control characters')],
      ['POST', KEYS_PATH, JSON.stringify({ name: 'ci\u0000' }), { ...json, ...bearer(jwt) }, bad('name', 'must not contain control characters')],
      ['POST', KEYS_PATH, JSON.stringify({ user: '\u0000' }), { ...json, ...bearer(jwt) }, bad('user', 'must not contain control characters')],
      // The posts schema refuses control characters itself.
      ['POST', POSTS_PATH, JSON.stringify({ title: 'a\u0000b' }), { ...json, ...bearer(jwt) }, bad('title', 'must match pattern "^[^\\u0000-\\u001f\\u007f]*$"')],
      ['POST', TOKENS_PATH, JSON.stringify({ name: 'n\u0000', type: 'bearer' }), { ...json, ...bearer(jwt) }, bad('name', 'must not contain control characters')],
      ['GET', `${TOKENS_PATH}?username=a%00`, '', bearer(jwt), bad('query.username', 'must not contain control characters')],
      ['GET', `${POSTS_PATH}/1%00`, '', bearer(jwt), bad('path.id', 'must not contain control characters')],
    ];
    for (const [method, url, payload, headers, body] of cases) {
      const res = await s.inject({ method: method as 'GET', url, headers, ...(payload === '' ? {} : { payload }) });
      assertJson(res, 400, body);
    }
    assertJson(await s.get(KEYS_PATH, bearer(jwt)), 200, []);
  });

  test('invalid UTF-8 in a site JSON or form body is 400 naming the field, and nothing is stored (item 7)', async (t) => {
    const s = await buildSite(t, kind);
    const jwt = await editor(s);
    const auth = { ...json, ...bearer(jwt) };
    const before = (await s.get(`${POSTS_PATH}?status=any`, bearer(jwt))).json().length;
    const cases: [string, string | Buffer, Record<string, string>, Record<string, unknown>][] = [
      [POSTS_PATH, withBytes('{"title":"caf~"}'), auth, bad('title', 'must be valid UTF-8')],
      [POSTS_PATH, withBytes('{"title":"ok","content":"x~y"}', Buffer.from([0xc3, 0x28])), auth, bad('content', 'must be valid UTF-8')],
      [POSTS_PATH, withBytes('{"ti~tle":"x"}'), auth, bad('ti\ufffdtle', 'must be valid UTF-8')],
      // A genuine U+FFFD elsewhere makes the culprit unclear: the body is named.
      [POSTS_PATH, withBytes('{"title":"\ufffd","content":"~"}'), auth, bad('body', 'must be valid UTF-8')],
      [POSTS_PATH, withBytes('{"title":"x"}~'), auth, bad('body', 'must be valid UTF-8')],
      [KEYS_PATH, withBytes('{"name":"~"}', Buffer.from([0xed, 0xa0, 0x80])), auth, bad('name', 'must be valid UTF-8')],
      [TOKEN_PATH, withBytes('{"username":"editor","password":"~"}'), json, bad('password', 'must be valid UTF-8')],
      [TOKEN_PATH, withBytes('username=editor&password=~'), { 'content-type': 'application/x-www-form-urlencoded' }, bad('password', 'must be valid UTF-8')],
      [TOKEN_PATH, multipart('XX', { username: 'editor', password: FF }), { 'content-type': 'multipart/form-data; boundary=XX' }, bad('password', 'must be valid UTF-8')],
    ];
    for (const [url, payload, headers, body] of cases) {
      assertJson(await s.inject({ method: 'POST', url, headers, payload }), 400, body);
    }
    assert.equal((await s.get(`${POSTS_PATH}?status=any`, bearer(jwt))).json().length, before, 'no post was stored');
    assertJson(await s.get(KEYS_PATH, bearer(jwt)), 200, []);
    // Valid UTF-8, a genuine U+FFFD included, still passes.
    const fine = await s.inject({ method: 'POST', url: POSTS_PATH, headers: auth, payload: Buffer.from('{"title":"café \ufffd ok"}') });
    assert.equal(fine.statusCode, 201, fine.body);
    assert.equal(fine.json().title.rendered, 'café \ufffd ok');
  });

  test('admin API: invalid UTF-8 is 400 naming the field; a NUL is refused as before; nothing is stored (item 7)', async (t) => {
    const s = await buildSite(t, kind);
    const customerKey = Number(s.customer.customerKey);
    const create = (payload: Buffer | string): Promise<LightMyRequestResponse> => s.identity.inject({
      method: 'POST', url: '/api/admin/users/create', headers: { ...json, ...s.admin.headers() }, payload,
    });
    const user = (username: string) => `{"customerKey":${customerKey},"username":"${username}","email":"u@example.test","firstName":"A","lastName":"B"}`;
    const r1 = await create(withBytes(user('b~d')));
    assert.equal(r1.statusCode, 400, r1.body);
    assert.deepEqual(r1.json(), admin400('username must be valid UTF-8'));
    const r2 = await create(user('bad').replace('"A"', '"A\\u0000"'));
    assert.deepEqual([r2.statusCode, r2.json()], [400, admin400('firstName must not contain control characters')]);
    const r3 = await s.identity.inject({
      method: 'POST', url: '/moas/api/admin/users/search', headers: { ...json, ...s.admin.headers() }, payload: withBytes(`{"customerKey":${customerKey},"username":"x~"}`),
    });
    assert.equal(r3.statusCode, 400, r3.body);
    const count = await s.admin.get('/admin/users/stats/count');
    assert.equal(count.statusCode, 200);
    assert.equal(count.json().data.count, 0, 'no user was created');
  });
});
