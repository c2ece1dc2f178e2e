/**
 * Secrets never reach the site's logs: with logging at its most verbose, the passwords, JWTs, API keys,
 * API tokens and provider tokens of good and bad requests appear in no log line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SYSTEM } from '../../src/audit/context.ts';
import { tampered } from '../helpers/secrets.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { bearer, buildSite, PASSWORD, POSTS_PATH, TOKEN_PATH } from './helpers.ts';

if (postgresUrl) await postgresStore();

describeEachStore('site logs', (kind) => {
  test('no credential of any request is logged', async (t) => {
    const s = await buildSite(t, kind, {
      env: {
        LATCHKEY_LOG_LEVEL: 'trace',
        LATCHKEY_SITE_PROVIDER_ISSUER: 'http://127.0.0.1:9',
        LATCHKEY_SITE_PROVIDER_CLIENT_ID: 'site',
        LATCHKEY_SITE_PROVIDER_CLIENT_SECRET: 'provider-client-secret-xyz',
      },
      overrides: {
        areas: [async (app) => { app.get('/boom', async () => { throw new Error('boom'); }); }],
      },
    });
    await s.addUser('alice', { groups: ['editors'] });
    const wrongPassword = 'Wrong-Password-Never-Logged-1';
    const secrets: string[] = [PASSWORD, wrongPassword, 'provider-client-secret-xyz'];

    const form = new URLSearchParams({ username: 'alice', password: PASSWORD }).toString();
    const res = await s.inject({ method: 'POST', url: TOKEN_PATH, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
    const jwt = res.json().jwt_token as string;
    await s.inject({ method: 'POST', url: TOKEN_PATH, payload: { username: 'alice', password: wrongPassword } });
    await s.inject({ method: 'POST', url: TOKEN_PATH, payload: `{"username":"alice","password":"${wrongPassword}"` , headers: { 'content-type': 'application/json' } });
    const key = await s.userKey('alice');
    const created = await s.inject({ method: 'POST', url: '/cms-json/api/v1/api-keys', headers: bearer(jwt) });
    const httpKey = created.json().apiKey as string;
    const apiToken = await s.composition.services.apiTokens.create(s.customerId, { userId: (await s.composition.services.users.findByLogin(s.customerId, 'alice'))!.id, name: 'ci', type: 'bearer', expiresInDays: 30 }, SYSTEM);
    const providerToken = 'opaque-provider-token-never-logged';
    secrets.push(jwt, key, httpKey, apiToken.secret, providerToken);

    await s.get(POSTS_PATH, bearer(jwt));
    await s.get(POSTS_PATH, bearer(tampered(jwt, 3)));
    await s.get(POSTS_PATH, { authorization: `JWT ${jwt}` });
    await s.get(POSTS_PATH, bearer(key));
    await s.get(POSTS_PATH, bearer(`${key}x`));
    await s.get(POSTS_PATH, bearer(apiToken.secret));
    await s.get(POSTS_PATH, { authorization: `Basic ${Buffer.from(`alice:${apiToken.secret}`).toString('base64')}` });
    await s.get(POSTS_PATH, { access_token: providerToken });
    await s.get(POSTS_PATH, { id_token: `Bearer ${providerToken}` });
    await s.get('/boom', bearer(jwt));
    await s.get(`${POSTS_PATH}?x=${encodeURIComponent('not-a-secret')}`, bearer(key));

    assert.ok(s.logs.length > 20, 'the site did log');
    assert.ok(s.logs.some((line) => line.includes('"statusCode":500')) || s.logs.some((line) => line.includes('unexpected error')));
    const all = s.logs.join('\n');
    for (const secret of secrets) {
      assert.ok(!all.includes(secret), `a log line carries ${secret.slice(0, 6)}…`);
      // Base64 of the Basic credentials, and the middle of long secrets (a truncated copy would still leak).
      if (secret.length > 30) assert.ok(!all.includes(secret.slice(8, 30)));
    }
    assert.ok(!all.includes(Buffer.from(`alice:${apiToken.secret}`).toString('base64')));
  });
});
