/**
 * The landing's second-factor pages outside a sign-in (both stores): without the pending-login cookie
 * they are a 403 page, with one that names no pending login a 410 page; nothing is ever a 500, and the
 * pages carry the landing's headers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build } from '../../helpers/app.ts';
import { describeEachStore } from '../../helpers/stores.ts';

describeEachStore('landing second-factor pages without a sign-in', (kind) => {
  test('no cookie: 403 "No sign-in in progress"; an unknown or malformed one: 410 "This sign-in has ended"', async (t) => {
    const app = await build(t, kind);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const [method, url] of [['GET', '/magic/code'], ['GET', '/magic/recovery'], ['POST', '/magic/recovery']] as const) {
      const bare = await app.identity.inject({ method, url, headers: form, payload: method === 'POST' ? 'code=abcdefghjk' : undefined });
      assert.equal(bare.statusCode, 403, `${method} ${url}`);
      assert.match(bare.body, /<h1>No sign-in in progress<\/h1>/);
      assert.equal(bare.headers['cache-control'], 'no-store');
      for (const cookie of ['lk_magic_login=' + 'A'.repeat(43), 'lk_magic_login=not-a-token']) {
        const ended = await app.identity.inject({ method, url, headers: { ...form, cookie }, payload: method === 'POST' ? 'code=abcdefghjk' : undefined });
        assert.equal(ended.statusCode, 410, `${method} ${url} ${cookie}`);
        assert.match(ended.body, /<h1>This sign-in has ended<\/h1>/);
      }
    }
  });
});
