import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { SYSTEM } from '../../../src/audit/context.ts';
import { generateSecret } from '../../../src/lib/tokens.ts';
import type { User } from '../../../src/identity/users/types.ts';
import { describeEachStore } from '../../helpers/stores.ts';
import { basic, bearer, buildTokenSite, DAY, GUID, INVALID, json, type TokenSite } from './harness.ts';

function expectedMyself(site: TokenSite, user: User, groups: string[], displayName = 'Alice Liddell') {
  const hash = createHash('md5').update(user.email.toLowerCase()).digest('hex');
  return {
    self: `${site.siteUrl}/rest/api/2/user?accountId=${user.guid}`,
    key: user.username.toLowerCase(),
    accountId: user.guid,
    accountType: 'atlassian',
    name: user.username,
    emailAddress: user.email,
    avatarUrls: {
      '48x48': `https://www.gravatar.com/avatar/${hash}?d=mm&s=48`,
      '24x24': `https://www.gravatar.com/avatar/${hash}?d=mm&s=24`,
      '16x16': `https://www.gravatar.com/avatar/${hash}?d=mm&s=16`,
      '32x32': `https://www.gravatar.com/avatar/${hash}?d=mm&s=32`,
    },
    displayName,
    active: true,
    deleted: false,
    timeZone: 'UTC',
    locale: 'en_US',
    groups: {
      size: groups.length,
      items: groups.map((name) => ({ name, self: `${site.siteUrl}/rest/api/2/group?groupname=${encodeURIComponent(name)}` })),
    },
    applicationRoles: { size: 0, items: [] },
    expand: 'groups,applicationRoles',
  };
}

async function expectInvalid(site: TokenSite, authorization: string, url = '/rest/api/2/myself'): Promise<void> {
  const res = await site.get(url, authorization);
  assert.equal(res.statusCode, 401, `${authorization.slice(0, 80)} → ${res.statusCode} ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepEqual(res.json(), INVALID);
}

describeEachStore('GET /rest/api/2/myself', (kind) => {
  test('a Bearer token returns the Jira user object of its owner', async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createGroups('Dev Team');
    const alice = await site.createUser('alice', { firstName: 'Alice', lastName: 'Liddell', email: 'Alice@Example.test', groups: ['Dev Team'] });
    const { secret } = await site.token(alice, 'bearer');
    const res = await site.get('/rest/api/2/myself', bearer(secret));
    const body = json(res, 200);
    assert.match(body.accountId, GUID);
    assert.deepEqual(body, expectedMyself(site, alice, ['Dev Team']));
    assert.equal(body.emailAddress, 'Alice@Example.test');
  });

  test('a Basic token works with the username or the e-mail, in any case', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice', { firstName: 'Alice', lastName: 'Liddell', email: 'alice@example.test' });
    const { secret } = await site.token(alice, 'basic');
    const defaultGroup = (await site.composition.services.users.getWithGroups(site.customerId, 'alice')).groups;
    for (const login of ['alice', 'ALICE', 'alice@example.test', 'Alice@EXAMPLE.test']) {
      const body = json(await site.get('/rest/api/2/myself', basic(login, secret)), 200);
      assert.deepEqual(body, expectedMyself(site, alice, defaultGroup), login);
    }
  });

  test('expand and other query parameters real clients send are accepted', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice', { firstName: 'Alice', lastName: 'Liddell' });
    const { secret } = await site.token(alice, 'bearer');
    const body = json(await site.get('/rest/api/2/myself?expand=groups,applicationRoles', bearer(secret)), 200);
    assert.equal(body.name, 'alice');
  });

  test('a user with no name shows the username as display name; a unicode username works with Basic', async (t) => {
    const site = await buildTokenSite(t, kind);
    const zoe = await site.createUser('zoë-日本', { firstName: '', lastName: '', email: 'zoe@example.test' });
    const { secret } = await site.token(zoe, 'basic');
    const body = json(await site.get('/rest/api/2/myself', basic('ZOË-日本', secret)), 200);
    assert.equal(body.displayName, 'zoë-日本');
    assert.equal(body.name, 'zoë-日本');
    assert.equal(body.self, `${site.siteUrl}/rest/api/2/user?accountId=${zoe.guid}`);
    await expectInvalid(site, basic('zoe-日本', secret));
  });

  test('a token records its last use, at most once a minute', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const created = await site.token(alice, 'bearer');
    const lastUsed = async () => (await site.composition.services.apiTokens.get(site.customerId, created.id)).lastUsedAt;
    assert.equal(await lastUsed(), null);
    const first = site.clock.now();
    json(await site.get('/rest/api/2/myself', bearer(created.secret)), 200);
    assert.equal(await lastUsed(), first);
    site.clock.advance(30_000);
    json(await site.get('/rest/api/2/myself', bearer(created.secret)), 200);
    assert.equal(await lastUsed(), first);
    site.clock.advance(30_000);
    json(await site.get('/rest/api/2/myself', bearer(created.secret)), 200);
    assert.equal(await lastUsed(), first + 60_000);
  });
});

describeEachStore('API token failures answer 401 with the spec body', (kind) => {
  test('unknown tokens, bad checksums, other prefixes, empty values', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const { secret } = await site.token(alice, 'bearer');
    const unknown = generateSecret('lkat');
    const flipped = secret.slice(0, 10) + (secret[10] === 'A' ? 'B' : 'A') + secret.slice(11);
    for (const value of [unknown, flipped, secret.slice(0, -1), `${secret}x`, 'lkat_', 'lkat_x', generateSecret('lksk').replace('lksk', 'lkat')]) {
      await expectInvalid(site, bearer(value));
      await expectInvalid(site, basic('alice', value));
    }
  });

  test('an expired token stops working at its expiry (test clock)', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const { secret, expiresAt } = await site.token(alice, 'bearer', { expiresInDays: 1 });
    assert.equal(expiresAt, site.clock.now() + DAY);
    site.clock.advance(DAY - 1);
    json(await site.get('/rest/api/2/myself', bearer(secret)), 200);
    site.clock.advance(1);
    await expectInvalid(site, bearer(secret));
  });

  test('a revoked token stops working at once', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const created = await site.token(alice, 'basic');
    json(await site.get('/rest/api/2/myself', basic('alice', created.secret)), 200);
    await site.composition.services.apiTokens.revoke(site.customerId, created.id, SYSTEM);
    await expectInvalid(site, basic('alice', created.secret));
  });

  test("another customer's token is refused, even for a user of the same name", async (t) => {
    const site = await buildTokenSite(t, kind);
    await site.createUser('alice');
    const other = await site.newCustomer();
    const otherId = other.customer.customerId;
    const res = await other.admin.post('/admin/users/create', {
      customerKey: other.customer.customerKey, username: 'alice', email: 'alice@example.test', firstName: 'A', lastName: 'L',
    });
    assert.equal(res.statusCode, 200, res.body);
    const foreignAlice = await site.composition.services.users.findByLogin(otherId, 'alice');
    assert.ok(foreignAlice);
    const foreignBearer = await site.token(foreignAlice, 'bearer', { customerId: otherId });
    const foreignBasic = await site.token(foreignAlice, 'basic', { customerId: otherId });
    await expectInvalid(site, bearer(foreignBearer.secret));
    await expectInvalid(site, basic('alice', foreignBasic.secret));
  });

  test('a Basic token only works with its own username; a token only with its own scheme', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    await site.createUser('bob');
    const basicToken = await site.token(alice, 'basic');
    const bearerToken = await site.token(alice, 'bearer');
    await expectInvalid(site, basic('bob', basicToken.secret));
    await expectInvalid(site, basic('nobody', basicToken.secret));
    await expectInvalid(site, bearer(basicToken.secret));
    await expectInvalid(site, basic('alice', bearerToken.secret));
    json(await site.get('/rest/api/2/myself', basic('alice', basicToken.secret)), 200);
    json(await site.get('/rest/api/2/myself', bearer(bearerToken.secret)), 200);
  });

  test('a wrong Basic secret is the API-token error whatever it looks like (issue 22 item 6)', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const { secret } = await site.token(alice, 'basic');
    const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
    const secrets = ['wrong', 'correct horse battery staple', '', 'x'.repeat(500), 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
      'lksk_0123456789abcdef', 'lkatx', secret.toUpperCase(), `${secret}:more`, 'zoë ünïcode', 'tab\there', 'nul\u0000'];
    for (const wrong of secrets) {
      await expectInvalid(site, basic('alice', wrong));
      await expectInvalid(site, basic('nobody', wrong));
    }
    // A pair that is not UTF-8 holds no token either.
    await expectInvalid(site, `Basic ${b64(Buffer.concat([Buffer.from('alice:'), Buffer.from([0xff, 0xfe])]))}`);
    await expectInvalid(site, `Basic ${b64(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`:${secret}`)]))}`);
    await expectInvalid(site, `Basic ${b64(`alice\u0000:${secret}`)}`);
  });

  test('Basic values that are no username:secret pair: bad base64, no colon, empty username, huge', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const { secret } = await site.token(alice, 'basic');
    const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
    const values = [
      'Basic !!!notbase64!!!',
      'Basic a',
      'Basic x',
      'Basic eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
      'Basic ',
      'Basic',
      `Basic ${b64(`alice${secret}`)}`,
      `Basic ${b64(`:${secret}`)}`,
      `Basic ${b64(`alice:${secret}`)} extra`,
      `Basic ${b64(`alice:${secret}`)}${'A'.repeat(10_000)}`,
      `Basic ${b64(`${'a'.repeat(6000)}:${secret}`)}`,
    ];
    // Not base64 of `username:secret`: the wrong-token-type row of the JWT method (issue 13 item 11, issue 22 item 6).
    for (const value of values) {
      const res = await site.get('/rest/api/2/myself', value);
      assert.equal(res.statusCode, 400, `${value.slice(0, 80)} → ${res.statusCode} ${res.body}`);
      assert.deepEqual(res.json(), { status: 'error', error: 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', code: '400', error_description: 'Authorization header token type must be Bearer.' });
    }
  });

  test('users disabled or deleted through the admin API lose their tokens at once', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const bearerToken = await site.token(alice, 'bearer');
    const basicToken = await site.token(alice, 'basic');
    const ck = site.customer.customerKey;
    json(await site.admin.post('/admin/users/disable', { customerKey: ck, username: 'alice' }), 200);
    await expectInvalid(site, bearer(bearerToken.secret));
    await expectInvalid(site, basic('alice', basicToken.secret));
    json(await site.admin.post('/admin/users/enable', { customerKey: ck, username: 'alice' }), 200);
    json(await site.get('/rest/api/2/myself', bearer(bearerToken.secret)), 200);
    json(await site.admin.post('/admin/users/delete', { customerKey: ck, username: 'alice' }), 200);
    await expectInvalid(site, bearer(bearerToken.secret));
    await expectInvalid(site, basic('alice', basicToken.secret));
    // Re-creating a user of the same name does not revive the old tokens.
    await site.createUser('alice');
    await expectInvalid(site, basic('alice', basicToken.secret));
  });

  test('no Basic or Bearer header value yields a 500 (property)', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice');
    const { secret } = await site.token(alice, 'basic');
    const headerText = fc.string({ unit: 'binary', maxLength: 300 }).map((s) => s.replace(/[\u0000-\u001f\u007f-\uffff]/g, ''));
    const value = fc.oneof(
      headerText.map((s) => `Basic ${s}`),
      headerText.map((s) => `Bearer ${s}`),
      headerText.map((s) => `Bearer lkat_${s}`),
      fc.tuple(fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 80 }))
        .map(([user, token]) => basic(user, token)),
      fc.string({ unit: 'binary', maxLength: 100 }).map((user) => basic(user, secret)),
      fc.integer({ min: 0, max: secret.length - 1 }).map((cut) => bearer(secret.slice(0, cut))),
    );
    await fc.assert(fc.asyncProperty(value, async (authorization) => {
      const res = await site.get('/rest/api/2/myself', authorization);
      if (authorization === basic('alice', secret)) return;
      assert.ok(res.statusCode === 401 || res.statusCode === 400, `${JSON.stringify(authorization)} → ${res.statusCode} ${res.body}`);
      if (res.statusCode === 401 && /^(basic|bearer lkat_)/i.test(authorization)) assert.deepEqual(res.json(), INVALID, authorization);
    }), { numRuns: 150 });
  });
});

describeEachStore('myself over a real socket, as Jira clients send it', (kind) => {
  test('fetch with Basic (jira.js email + apiToken) and Bearer (personal access token)', async (t) => {
    const site = await buildTokenSite(t, kind);
    const alice = await site.createUser('alice', { firstName: 'Alice', lastName: 'Liddell', email: 'alice@example.test' });
    const basicToken = await site.token(alice, 'basic');
    const bearerToken = await site.token(alice, 'bearer');
    const address = await site.site.listen({ port: 0, host: '127.0.0.1' });
    const groups = (await site.composition.services.users.getWithGroups(site.customerId, 'alice')).groups;
    const call = (authorization: string, path = '/rest/api/2/myself') => fetch(`${address}${path}`, {
      headers: { Authorization: authorization, Accept: 'application/json', 'Content-Type': 'application/json' },
    });
    for (const authorization of [basic('alice@example.test', basicToken.secret), basic('alice', basicToken.secret), bearer(bearerToken.secret)]) {
      const res = await call(authorization);
      assert.equal(res.status, 200);
      assert.match(String(res.headers.get('content-type')), /^application\/json/);
      assert.deepEqual(await res.json(), expectedMyself(site, alice, groups));
    }
    // jira-client's getCurrentUser asks for the expansions.
    const expanded = await call(bearer(bearerToken.secret), '/rest/api/2/myself?expand=groups%2CapplicationRoles');
    assert.equal(expanded.status, 200);
    const refused = await call(bearer(generateSecret('lkat')));
    assert.equal(refused.status, 401);
    assert.deepEqual(await refused.json(), INVALID);
  });
});
