/**
 * The customer's OpenID provider when its own state cannot be read (issue 17 part 3). In a full
 * outage the mount fails first (the customer lookup) and answers 503 itself (database-down-faces);
 * here the customer and the client still resolve but the provider's store (oidc_models: codes,
 * interactions, sessions) fails with the driver's connection error, so the error comes from inside
 * oidc-provider, which would render it as a 500 server_error. Its documented hooks turn it into a
 * 503 with Retry-After: renderError for the browser's page, a post-middleware for the JSON endpoints.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createStore } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { testEnv } from '../helpers/app.ts';

const REDIRECT_URI = 'https://rp.example.test/cb';

test('the OpenID provider\'s store failing: 503 with Retry-After from the authorization page and the token endpoint, not a 500', async (t) => {
  let cut = false;
  // pg's text for a connection lost mid-query, thrown for any statement on the provider's table.
  const failing: KyselyPlugin = {
    transformQuery(args) {
      if (cut && JSON.stringify(args.node).includes('"oidc_models"')) throw new Error('Connection terminated unexpectedly');
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const store = await createStore(':memory:');
  await migrate(store);
  const composition = await compose(loadConfig(testEnv()), { store: { ...store, db: store.db.withPlugin(failing) } });
  const identity = await composition.buildIdentityApp();
  t.after(async () => { await identity.close(); await composition.close(); await store.close(); });

  const customer = await composition.services.customers.create({ email: 'provider-outage@example.test' });
  const { application, clientSecret } = await composition.services.applications.create(customer.customerId, {
    name: 'Portal', type: 'OAUTH', redirectUris: [REDIRECT_URI], loginUrls: ['https://rp.example.test/login'],
  }, SYSTEM);
  const issuerPath = `/customers/${customer.customerKey}`;
  const verifier = randomBytes(32).toString('base64url');
  const authorization = () => identity.inject({
    method: 'GET',
    url: `${issuerPath}/auth?${new URLSearchParams({
      client_id: application.uuid, response_type: 'code', scope: 'openid', redirect_uri: REDIRECT_URI, state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    })}`,
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  const token = () => identity.inject({
    method: 'POST',
    url: `${issuerPath}/token`,
    headers: {
      authorization: `Basic ${Buffer.from(`${application.uuid}:${clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams({ grant_type: 'authorization_code', code: randomBytes(32).toString('base64url'), redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString(),
  });

  // With the store up: the authorization request goes on to the interaction, an unknown code is invalid_grant.
  const before = await authorization();
  assert.equal(before.statusCode, 303, before.body);
  assert.match(String(before.headers.location), /\/interaction\//);
  const unknownCode = await token();
  assert.equal(unknownCode.statusCode, 400, unknownCode.body);
  assert.equal((unknownCode.json() as { error: string }).error, 'invalid_grant');

  cut = true;
  const page = await authorization();
  assert.equal(page.statusCode, 503, page.body);
  assert.equal(page.headers['retry-after'], '5');
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /<h1>Sign-in is unavailable right now<\/h1>/);
  assert.doesNotMatch(page.body, /server_error|Connection terminated/, 'no internal detail on the page');

  const json = await token();
  assert.equal(json.statusCode, 503, json.body);
  assert.equal(json.headers['retry-after'], '5');
  assert.match(String(json.headers['cache-control']), /no-store/);
  assert.deepEqual(json.json(), { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable; retry later.' });

  // The store back: the same provider answers as before.
  cut = false;
  assert.equal((await authorization()).statusCode, 303);
  assert.equal((await token()).statusCode, 400);
});
