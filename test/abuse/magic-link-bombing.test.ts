/**
 * E-mail bombing through magic-link generate: a caller holding the customer's API key (or a
 * bearer token of its OAuth client) cannot flood one user's mailbox. Generates are capped per user
 * (whatever the application) by an atomic reservation in the database, so concurrent calls on any
 * node stay within the cap; the cap ends after its hour.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GENERATE_CAP_PER_USER, GENERATE_CAP_WINDOW_MS } from '../../src/identity/magic-links/service.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { concurrently, RETURN_URL, setup } from './helpers.ts';

const CAPPED = { status: 'ERROR', code: '429', message: 'Too many magic links for this user: try again later.' };
const SENT = "The magic link has been sent to the user's registered e-mail address.";

describeEachStore('abuse: e-mail bombing through magic-link generate', (kind) => {
  test('one user gets at most the cap of links per hour; the next is 429 and queues no mail; the cap ends after the hour', async (t) => {
    const env = await setup(t, kind);
    const user = await env.addUser('bombed');
    const other = await env.addUser('bystander');
    const apps = [await env.magicApp(), await env.magicApp()];
    const generate = (username: string, i: number) =>
      env.admin.post('/admin/magiclink/generate', { username, applicationUuid: apps[i % 2], redirectUri: RETURN_URL });
    const mails = async (to: string) => (await env.composition.store.db.selectFrom('mail_outbox').select('id').where('to_address', '=', to).execute()).length;

    for (let i = 0; i < GENERATE_CAP_PER_USER; i++) {
      const res = await generate(user.username, i);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().message, SENT);
    }
    // By username or by e-mail, through either application: the same user, the same cap.
    for (const [login, i] of [[user.username, 0], [user.email, 1]] as const) {
      const refused = await generate(login, i);
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json(), CAPPED);
      assert.match(String(refused.headers['retry-after']), /^[1-9][0-9]*$/);
      assert.ok(Number(refused.headers['retry-after']) <= GENERATE_CAP_WINDOW_MS / 1000);
    }
    assert.equal(await mails(user.email), GENERATE_CAP_PER_USER);
    // Another user is not affected.
    assert.equal((await generate(other.username, 0)).statusCode, 200);

    env.clock.advance(GENERATE_CAP_WINDOW_MS + 1_000);
    assert.equal((await generate(user.username, 0)).statusCode, 200, 'the cap expires: no lasting lockout');
    assert.equal(await mails(user.email), GENERATE_CAP_PER_USER + 1);
  });

  test('30 concurrent generates for one user: at most the cap succeed, the rest are 429, never a 5xx', async (t) => {
    const env = await setup(t, kind);
    const user = await env.addUser('raced');
    const apps = await concurrently(6, () => env.magicApp());
    const results = await concurrently(30, (i) =>
      env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: apps[i % apps.length], redirectUri: RETURN_URL }));
    const statuses = results.map((r) => r.statusCode);
    assert.ok(statuses.every((s) => s === 200 || s === 429), statuses.join(','));
    assert.equal(statuses.filter((s) => s === 200).length, GENERATE_CAP_PER_USER);
    for (const r of results.filter((r) => r.statusCode === 429)) assert.deepEqual(r.json(), CAPPED);
    const rows = await env.composition.store.db.selectFrom('mail_outbox').select('id').where('to_address', '=', user.email).execute();
    assert.equal(rows.length, GENERATE_CAP_PER_USER);
  });

  test('a refused generate (no policy, unknown application) does not use up the cap', async (t) => {
    const env = await setup(t, kind);
    const user = await env.addUser('careful');
    const app = await env.magicApp();
    const { application: bare } = await env.composition.services.applications.create(env.customer.customerId, { name: 'Bare', type: 'JWT', returnUrls: [RETURN_URL] });
    for (let i = 0; i < GENERATE_CAP_PER_USER + 3; i++) {
      const res = await env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: bare.uuid, redirectUri: RETURN_URL });
      assert.equal(res.statusCode, 400, res.body);
    }
    for (let i = 0; i < GENERATE_CAP_PER_USER; i++) {
      const res = await env.admin.post('/admin/magiclink/generate', { username: user.username, applicationUuid: app, redirectUri: RETURN_URL });
      assert.equal(res.statusCode, 200, res.body);
    }
  });
});
