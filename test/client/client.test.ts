/**
 * @latchkey/client against a real server on a real port, on both stores: every admin operation once
 * through the typed calls, the documented error bodies as the client types them (JSON, and the plain
 * text of disable/enable/delete), the /moas/api option and OAuth bearer tokens for magic links.
 * Type-level checks (expectError's second argument must be one of the route's documented error
 * bodies) run with `npm run typecheck`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BEARER_PATHS, clientCredentialsToken, createLatchkeyClient, latchkeyAuth, LatchkeyTokenError, signature,
} from '@latchkey/client';
import { signRequest } from '../../src/identity/admin-auth.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { serve, type ServedApp } from './server.ts';

const DENIED = 'API Request denied: Incorrect Authorization header.';
const STANDARD_401 = { status: 'ERROR', code: '401', message: DENIED } as const;
const RETURN_URL = 'https://app.example.test/back';
const PASSWORD = 'correct horse battery staple';

/** The error body, checked at run time and (through NoInfer) against the route's documented error type. */
function expectError<E>(result: { error?: E; response: Response }, status: number, expected: NoInfer<E>): void {
  assert.equal(result.response.status, status);
  assert.deepStrictEqual(result.error, expected);
}

/** The 2xx body, or a failure showing the error body. */
function ok<D>(result: { data?: D; error?: unknown; response: Response }): D {
  assert.equal(result.response.status, 200, JSON.stringify(result.error));
  return result.data as D;
}

/** Records the path and Authorization scheme of every request the client sends. */
function recordingFetch(): { fetch: typeof fetch; seen: { path: string; auth: string }[] } {
  const seen: { path: string; auth: string }[] = [];
  return {
    seen,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const authorization = request.headers.get('authorization') ?? '';
      seen.push({ path: new URL(request.url).pathname, auth: authorization.startsWith('Bearer ') ? 'bearer' : authorization ? 'signature' : 'none' });
      return fetch(request);
    },
  };
}

async function userWithApp(app: ServedApp, username: string) {
  const { client, ck } = app;
  ok(await client.POST('/api/admin/users/create', { body: { customerKey: ck, username, email: `${username}@example.com`, firstName: 'Ada', lastName: 'Lovelace' } }));
  const { application } = ok(await client.POST('/api/admin/applications/create', { body: { customerKey: ck, name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] } }));
  ok(await client.POST('/api/admin/policies/create', { body: { customerKey: ck, applicationUuid: application.applicationUuid, firstFactor: 'MAGIC_LINK' } }));
  return application.applicationUuid;
}

test('signature() is the service\'s digest; customerKey without apiKey is refused', async () => {
  assert.equal(await signature('1234567', '1700000000000', 'lkak_secret'), signRequest('1234567', '1700000000000', 'lkak_secret'));
  assert.throws(() => latchkeyAuth({ customerKey: '1' }), TypeError);
  assert.deepEqual([...BEARER_PATHS], ['/api/admin/magiclink/generate', '/api/admin/magiclink/revoke']);
});

describeEachStore('typed client', (kind) => {
  test('every admin operation once: users, groups, MFA, applications, policies, OAuth clients, magic links', async (t) => {
    const app = await serve(t, kind);
    const { client, ck } = app;
    const customerId = app.customer.customerId;

    // Users.
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/create', {
      body: { customerKey: ck, username: 'ada', email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', password: PASSWORD },
    })), { userId: 1, username: 'ada', email: 'ada@example.com', status: 'SUCCESS', message: 'User created successfully.' });
    const userId = (await client.POST('/api/admin/users/get', { body: { customerKey: ck, username: 'ada' } })).data!.userId;
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/update', { body: { customerKey: ck, username: 'ada', phone: '+15550100' } })),
      { userId, username: 'ada', email: 'ada@example.com', status: 'SUCCESS', message: 'User updated successfully.' });
    const all = ok(await client.POST('/api/admin/users/getall', { body: { customerKey: ck, batchSize: 10, batchNo: 1 } }));
    assert.deepStrictEqual([all.status, all.fetchedCount, all.nextBatch, (all.users ?? []).map((u) => [u.username, u.primaryPhone])], ['SUCCESS', 1, -1, [['ada', '+15550100']]]);
    const got = ok(await client.POST('/api/admin/users/get', { body: { customerKey: ck, username: 'ADA@example.com' } }));
    assert.deepStrictEqual([got.status, got.username, got.email, got.phone, got.authType, got.users?.[0]?.role], ['SUCCESS', 'ada', 'ada@example.com', '+15550100', 'NONE', 'END_USER']);
    const found = ok(await client.POST('/api/admin/users/search', { body: { customerKey: ck, username: 'ada' } }));
    assert.deepStrictEqual([found.status, found.guid], ['USER_FOUND', got.guid]);
    assert.deepStrictEqual(ok(await client.GET('/api/admin/users/stats/count')),
      { status: 'SUCCESS', statusCode: 200, message: 'Successfully fetched user count.', data: { count: 1 } });
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/disable', { body: { customerKey: ck, username: 'ada' } })),
      { customerId, status: 'SUCCESS', message: 'User disabled successfully.' });
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/enable', { body: { customerKey: ck, username: 'ada' } })),
      { customerId, status: 'SUCCESS', message: 'User enabled successfully.' });
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/change-password', {
      body: { customerKey: ck, username: 'ada', oldPassword: PASSWORD, password: 'another long passphrase' },
    })), { customerId, status: 'SUCCESS', message: 'Password changed successfully.' });

    // Groups.
    assert.deepStrictEqual(ok(await client.POST('/api/admin/groups/update', { body: { customerKey: ck, groups: [{ groupName: 'Team', isDefault: 'false' }] } })),
      { customerId, status: 'SUCCESS', message: 'Groups updated successfully.' });
    const groups = ok(await client.POST('/api/admin/groups/getall', { body: { customerKey: ck, batchSize: 10, batchNo: 1 } }));
    assert.deepStrictEqual((groups.groups ?? []).map((g) => [g.groupName, g.isDefault]), [['DEFAULT', true], ['Team', false]]);
    assert.deepStrictEqual(ok(await client.POST('/api/admin/groups/members/update', { body: { customerKey: ck, groupName: 'Team', users: [{ primaryEmail: 'ada@example.com' }] } })),
      { customerId, status: 'SUCCESS', message: 'Group members updated successfully.' });
    const members = ok(await client.POST('/api/admin/groups/members', { body: { customerKey: ck, batchSize: 10, batchNo: 1 } }));
    assert.deepStrictEqual((members.groupDetails ?? []).map((m) => [m.groupName, m.primaryEmail]), [['DEFAULT', 'ada@example.com'], ['Team', 'ada@example.com']]);

    // Authenticator app.
    const secret = ok(await client.POST('/api/auth/google-auth-secret', { body: { customerKey: ck, username: 'ada' } }));
    assert.deepStrictEqual([secret.status, secret.responseType, typeof secret.qrCodeData], ['SUCCESS', 'GOOGLE_AUTHENTICATOR', 'string']);
    const validated = ok(await client.POST('/api/auth/validate-google-auth-secret', {
      body: { customerKey: ck, username: 'ada', authenticatorType: 'GOOGLE AUTHENTICATOR', secret: secret.secret!, otpToken: totpAt(secret.secret!, app.clock.now()) },
    }));
    assert.deepStrictEqual([validated.status, validated.message], ['SUCCESS', 'Authenticator app registered successfully.']);
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/mfa/reset', { body: { customerKey: ck, username: 'ada' } })),
      { customerId, status: 'SUCCESS', message: 'Authenticator app removed.' });
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/sessions/revoke', { body: { customerKey: ck, username: 'ada' } })),
      { status: 'SUCCESS', message: "The user's sessions have been revoked." });

    // Applications, policies, OAuth clients.
    const { application } = ok(await client.POST('/api/admin/applications/create', { body: { customerKey: ck, name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] } }));
    assert.deepStrictEqual(ok(await client.POST('/api/admin/applications/getall', { body: { customerKey: ck } })), { status: 'SUCCESS', applications: [application] });
    const { policy } = ok(await client.POST('/api/admin/policies/create', { body: { customerKey: ck, applicationUuid: application.applicationUuid, firstFactor: 'MAGIC_LINK' } }));
    assert.deepStrictEqual([policy.firstFactor, policy.secondFactor, policy.groupName], ['MAGIC_LINK', 'NONE', '']);
    assert.deepStrictEqual(ok(await client.POST('/api/admin/policies/getall', { body: { customerKey: ck } })), { status: 'SUCCESS', policies: [policy] });
    const oauthClient = ok(await client.POST('/api/admin/oauth-clients/create', { body: { customerKey: ck, name: 'automation' } }));
    assert.match(oauthClient.clientSecret, /^lkcs_/);
    assert.deepStrictEqual(ok(await client.POST('/api/admin/oauth-clients/getall', { body: { customerKey: ck } })).oauthClients.map((c) => [c.clientId, c.name]),
      [[oauthClient.clientId, 'automation']]);

    // Magic links (signed; the bearer test below uses tokens).
    const generated = ok(await client.POST('/api/admin/magiclink/generate', { body: { customerKey: ck, username: 'ada', applicationUuid: application.applicationUuid, redirectUri: RETURN_URL } }));
    assert.deepStrictEqual(generated, { status: 'SUCCESS', message: 'The magic link has been sent to the user\'s registered e-mail address.', correlationId: generated.correlationId });
    assert.deepStrictEqual(ok(await client.POST('/api/admin/magiclink/revoke', { body: { customerKey: ck, username: 'ada' } })),
      { status: 'SUCCESS', message: 'The invite link has been revoked.' });

    // Deletions last.
    assert.equal(ok(await client.POST('/api/admin/oauth-clients/delete', { body: { customerKey: ck, clientId: oauthClient.clientId } })).status, 'SUCCESS');
    assert.equal(ok(await client.POST('/api/admin/policies/delete', { body: { customerKey: ck, policyId: policy.policyId } })).status, 'SUCCESS');
    assert.equal(ok(await client.POST('/api/admin/applications/delete', { body: { customerKey: ck, applicationUuid: application.applicationUuid } })).status, 'SUCCESS');
    assert.deepStrictEqual(ok(await client.POST('/api/admin/users/delete', { body: { customerKey: ck, username: 'ada' } })).status, 'SUCCESS');
    assert.deepStrictEqual(ok(await client.GET('/api/admin/users/stats/count')).data, { count: 0 });
  });

  test('documented error bodies come back typed: JSON per route, plain text on disable/enable/delete', async (t) => {
    const app = await serve(t, kind);
    const { client, ck } = app;
    const wrongKey = app.clientWith({ apiKey: 'lkak_wrong' });
    const nobody = { customerKey: ck, username: 'nobody' };

    expectError(await client.POST('/api/admin/users/get', { body: nobody }), 404, { username: 'nobody', status: 'FAILED', message: 'Invalid username or email.' });
    expectError(await wrongKey.POST('/api/admin/users/get', { body: nobody }), 401, STANDARD_401);
    expectError(await wrongKey.GET('/api/admin/users/stats/count'), 401, STANDARD_401);
    expectError(await client.POST('/api/admin/users/sessions/revoke', { body: nobody }), 404, { username: 'nobody', status: 'FAILED', message: 'Invalid username or email.' });
    expectError(await client.POST('/api/admin/users/disable', { body: nobody }), 403, 'Invalid username or email.');
    expectError(await client.POST('/api/admin/users/enable', { body: nobody }), 403, 'Invalid username or email.');
    expectError(await wrongKey.POST('/api/admin/users/disable', { body: nobody }), 400, `API Authorization: ${DENIED}`);
    expectError(await wrongKey.POST('/api/admin/users/enable', { body: nobody }), 400, `API Authorization: ${DENIED}`);
    expectError(await client.POST('/api/admin/users/delete', { body: nobody }), 403, 'You are not authorized to perform this operation.');
    expectError(await wrongKey.POST('/api/admin/users/change-password', { body: { ...nobody, oldPassword: PASSWORD, password: 'another long passphrase' } }),
      401, { status: 'error', code: '401', message: DENIED });
    expectError(await client.POST('/api/admin/users/create', { body: { customerKey: ck, username: 'x', firstName: 'X', lastName: 'Y', email: 'not an e-mail' } }),
      400, { status: 'ERROR', code: '400', message: 'email must match pattern "^[^\\s@]+@[^\\s@]+$"' });
    expectError(await client.POST('/api/admin/groups/members/update', { body: { customerKey: ck, groupName: 'Nope', users: [{ primaryEmail: 'a@example.com' }] } }),
      404, { status: 'ERROR', code: '404', message: 'group Nope does not exist' });

    expectError(await client.POST('/api/admin/magiclink/revoke', { body: nobody }), 404, { status: 'FAILED', message: 'No active invite link was found for the user.' });
    expectError(await client.POST('/api/admin/magiclink/generate', { body: { ...nobody, applicationUuid: '7c9e6679-7425-40de-944b-e07fc1f90ae7' } }),
      404, { status: 'ERROR', statusCode: 404, message: 'The username does not exist.' });
    expectError(await wrongKey.POST('/api/admin/magiclink/revoke', { body: nobody }), 401, STANDARD_401);
    expectError(await client.POST('/api/admin/applications/delete', { body: { customerKey: ck, applicationUuid: '7c9e6679-7425-40de-944b-e07fc1f90ae7' } }),
      404, { status: 'ERROR', code: '404', message: 'The application does not exist.' });
    expectError(await wrongKey.POST('/api/admin/oauth-clients/getall', { body: { customerKey: ck } }), 401, STANDARD_401);
  });

  test('basePath /moas/api sends every call under the hosted service\'s path, bodies and signature intact', async (t) => {
    const app = await serve(t, kind);
    const recorder = recordingFetch();
    const moas = app.clientWith({ basePath: '/moas/api', fetch: recorder.fetch });
    ok(await moas.POST('/api/admin/users/create', { body: { customerKey: app.ck, username: 'moe', email: 'moe@example.com', firstName: 'Moe', lastName: 'Szyslak' } }));
    assert.equal(ok(await moas.POST('/api/admin/users/get', { body: { customerKey: app.ck, username: 'moe' }, params: { query: { includePwdExpDttm: 'false' } } })).username, 'moe');
    assert.deepStrictEqual(ok(await moas.GET('/api/admin/users/stats/count')).data, { count: 1 });
    expectError(await moas.POST('/api/admin/users/disable', { body: { customerKey: app.ck, username: 'nobody' } }), 403, 'Invalid username or email.');
    assert.deepStrictEqual(recorder.seen, [
      { path: '/moas/api/admin/users/create', auth: 'signature' },
      { path: '/moas/api/admin/users/get', auth: 'signature' },
      { path: '/moas/api/admin/users/stats/count', auth: 'signature' },
      { path: '/moas/api/admin/users/disable', auth: 'signature' },
    ]);
  });

  test('bearer: client-credentials tokens for the magic-link routes, the signature for everything else', async (t) => {
    const app = await serve(t, kind);
    const applicationUuid = await userWithApp(app, 'bea');
    const { clientId, clientSecret } = ok(await app.client.POST('/api/admin/oauth-clients/create', { body: { customerKey: app.ck, name: 'automation' } }));

    const tokenRecorder = recordingFetch();
    const token = clientCredentialsToken({ baseUrl: app.baseUrl, clientId, clientSecret, fetch: tokenRecorder.fetch });
    const recorder = recordingFetch();
    // Bearer only: the magic-link routes work without the API key.
    const bearerOnly = createLatchkeyClient({ baseUrl: app.baseUrl, bearer: token, fetch: recorder.fetch });
    const generated = ok(await bearerOnly.POST('/api/admin/magiclink/generate', { body: { username: 'bea', applicationUuid, redirectUri: RETURN_URL } }));
    assert.equal(generated.status, 'SUCCESS');
    assert.deepStrictEqual(ok(await bearerOnly.POST('/api/admin/magiclink/revoke', { body: { username: 'bea' } })), { status: 'SUCCESS', message: 'The invite link has been revoked.' });
    // …and nothing else: a bearer token is refused on the other admin routes.
    expectError(await bearerOnly.POST('/api/admin/users/get', { body: { customerKey: app.ck, username: 'bea' } }), 401, STANDARD_401);
    // One token request served all three calls.
    assert.deepStrictEqual(tokenRecorder.seen, [{ path: '/oauth/token', auth: 'none' }]);

    // Keys and bearer together: bearer where the document allows it, the signature elsewhere; /moas/api too.
    const both = app.clientWith({ bearer: token, basePath: '/moas/api', fetch: recorder.fetch });
    recorder.seen.length = 0;
    ok(await both.POST('/api/admin/magiclink/generate', { body: { username: 'bea', applicationUuid, redirectUri: RETURN_URL } }));
    ok(await both.POST('/api/admin/users/get', { body: { customerKey: app.ck, username: 'bea' } }));
    assert.deepStrictEqual(recorder.seen, [
      { path: '/moas/api/admin/magiclink/generate', auth: 'bearer' },
      { path: '/moas/api/admin/users/get', auth: 'signature' },
    ]);

    // A wrong secret: the token endpoint's RFC 6749 body, as a LatchkeyTokenError.
    const wrong = clientCredentialsToken({ baseUrl: app.baseUrl, clientId, clientSecret: 'lkcs_wrong' });
    await assert.rejects(wrong(), (error: unknown) => {
      assert.ok(error instanceof LatchkeyTokenError);
      assert.equal(error.status, 401);
      assert.equal((error.body as { error: string }).error, 'invalid_client');
      return true;
    });
    // A stale string token (its client deleted) is refused with the magic-link 401 body.
    const stale = await token();
    ok(await app.client.POST('/api/admin/oauth-clients/delete', { body: { customerKey: app.ck, clientId } }));
    const staleClient = createLatchkeyClient({ baseUrl: app.baseUrl, bearer: stale });
    expectError(await staleClient.POST('/api/admin/magiclink/revoke', { body: { username: 'bea' } }), 401, STANDARD_401);
  });
});
