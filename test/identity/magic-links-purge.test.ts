/**
 * The magic-link purge deletes exactly what it should, on both stores: links used, revoked or
 * expired more than 7 days ago; expired pending logins and OAuth access tokens; mails sent (or given
 * up) more than 30 days ago. It runs in the server's background once per cluster per interval.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { insertLink, insertPendingLogin } from '../../src/identity/magic-links/repo.ts';
import { DEFAULT_PURGE_INTERVAL_MS, magicLinkPurgeJob, purgeMagicLinkData } from '../../src/identity/magic-links/purge.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const DAY = 24 * 60 * 60 * 1000;

describeEachStore('magic-link purge', (kind) => {
  test('deletes exactly the old links, expired logins and tokens, and old sent or failed mails', async (t) => {
    const env = await build(t, kind);
    const { db } = env.composition.store;
    const { services } = env.composition;
    const customerId = env.customer.customerId;
    const now = env.clock.now();
    const username = `u${randomBytes(4).toString('hex')}`;
    const created = await env.admin.post('/admin/users/create', { customerKey: Number(env.customer.customerKey), username, email: `${username}@example.test`, firstName: 'Ada', lastName: 'Lovelace' });
    assert.equal(created.statusCode, 200, created.body);
    const user = await services.users.findByLogin(customerId, username);
    // One open INVITE per user and application: each open link gets its own application.
    const appIds: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { application } = await services.applications.create(customerId, { name: `App ${i}`, type: 'JWT', returnUrls: ['https://app.example.test/sso'] }, SYSTEM);
      appIds.push(application.id);
    }

    const link = async (label: string, state: { consumedAt?: number; revokedAt?: number; expiresAt: number; app?: number }) => {
      const id = await insertLink(db, customerId, {
        userId: user!.id, applicationId: appIds[state.app ?? 0]!, tokenHash: `${label}-${randomBytes(8).toString('hex')}`,
        redirectUri: null, expiresAt: state.expiresAt, now: state.expiresAt - DAY, correlationId: label,
      });
      await db.updateTable('magic_links').set({ consumed_at: state.consumedAt ?? null, revoked_at: state.revokedAt ?? null }).where('id', '=', id).execute();
      return id;
    };
    const links = {
      usedLongAgo: await link('used-8d', { consumedAt: now - 8 * DAY, expiresAt: now - 8 * DAY + 60_000 }),
      usedRecently: await link('used-6d', { consumedAt: now - 6 * DAY, expiresAt: now - 6 * DAY + 60_000 }),
      revokedLongAgo: await link('revoked-8d', { revokedAt: now - 8 * DAY, expiresAt: now + DAY }),
      revokedRecently: await link('revoked-1d', { revokedAt: now - DAY, expiresAt: now + DAY }),
      expiredLongAgo: await link('expired-8d', { expiresAt: now - 8 * DAY, app: 1 }),
      expiredRecently: await link('expired-6d', { expiresAt: now - 6 * DAY, app: 2 }),
      open: await link('open', { expiresAt: now + DAY, app: 3 }),
    };
    await insertPendingLogin(db, customerId, { idHash: 'expired', linkId: links.usedRecently, expiresAt: now - 1 });
    await insertPendingLogin(db, customerId, { idHash: 'live', linkId: links.usedRecently, expiresAt: now + 60_000 });

    const { client } = await services.oauthClients.create(customerId, { name: 'ci' }, SYSTEM);
    const clientRow = await db.selectFrom('oauth_clients').select('id').where('client_id', '=', client.clientId).executeTakeFirstOrThrow();
    const token = async (label: string, expiresAt: number) => Number((await db.insertInto('oauth_access_tokens').values({
      token_hash: `${label}-${randomBytes(8).toString('hex')}`, customer_id: customerId, client_id: clientRow.id, scope: 'magiclink', expires_at: expiresAt, created_at: expiresAt - 3_600_000,
    }).returning('id').executeTakeFirstOrThrow()).id);
    const tokens = { expired: await token('expired', now - 1), endsNow: await token('ends-now', now), live: await token('live', now + 1000) };

    const mail = async (label: string, status: 'pending' | 'sent' | 'failed', createdAt: number, sentAt: number | null) => Number((await db.insertInto('mail_outbox').values({
      customer_id: customerId, template: 'magic-link-invite', to_address: 'ada@example.test', sealed_data: null, message_id: `<${label}-${randomBytes(6).toString('hex')}@x>`,
      status, attempts: 1, next_attempt_at: createdAt, claimed_by: null, claimed_until: null, last_error: null, created_at: createdAt, sent_at: sentAt,
    }).returning('id').executeTakeFirstOrThrow()).id);
    const mails = {
      sentLongAgo: await mail('sent-31d', 'sent', now - 31 * DAY, now - 31 * DAY),
      sentRecently: await mail('sent-29d', 'sent', now - 40 * DAY, now - 29 * DAY),
      pendingOld: await mail('pending-40d', 'pending', now - 40 * DAY, null),
      failedLongAgo: await mail('failed-31d', 'failed', now - 31 * DAY, null),
      failedRecently: await mail('failed-10d', 'failed', now - 10 * DAY, null),
    };

    assert.deepEqual(await purgeMagicLinkData(db, now), { magicLinks: 3, pendingLogins: 1, accessTokens: 2, mails: 2 });
    const ids = async (table: 'magic_links' | 'oauth_access_tokens' | 'mail_outbox') =>
      (await db.selectFrom(table).select('id').where('customer_id', '=', customerId).orderBy('id').execute()).map((r) => Number(r.id));
    assert.deepEqual(await ids('magic_links'), [links.usedRecently, links.revokedRecently, links.expiredRecently, links.open]);
    assert.deepEqual((await db.selectFrom('magic_link_pending_logins').select('id_hash').where('customer_id', '=', customerId).execute()).map((r) => r.id_hash), ['live']);
    assert.deepEqual(await ids('oauth_access_tokens'), [tokens.live]);
    assert.deepEqual(await ids('mail_outbox'), [mails.sentRecently, mails.pendingOld, mails.failedRecently]);

    // Idempotent: a second run (another node, a retry) finds nothing.
    assert.deepEqual(await purgeMagicLinkData(db, now), { magicLinks: 0, pendingLogins: 0, accessTokens: 0, mails: 0 });
  });

  test('walks a table larger than one batch', async (t) => {
    const env = await build(t, kind);
    const { db } = env.composition.store;
    const customerId = env.customer.customerId;
    const now = env.clock.now();
    const { client } = await env.composition.services.oauthClients.create(customerId, { name: 'ci' }, SYSTEM);
    const clientId = (await db.selectFrom('oauth_clients').select('id').where('client_id', '=', client.clientId).executeTakeFirstOrThrow()).id;
    // Expired and live interleaved, 1,300 rows: three batches, the live ones untouched.
    const rows = Array.from({ length: 1300 }, (_, i) => ({
      token_hash: `t${i}-${randomBytes(6).toString('hex')}`, customer_id: customerId, client_id: clientId, scope: 'magiclink',
      expires_at: i % 3 === 0 ? now + DAY : now - DAY, created_at: now - 2 * DAY,
    }));
    for (let i = 0; i < rows.length; i += 250) await db.insertInto('oauth_access_tokens').values(rows.slice(i, i + 250)).execute();
    // (On PostgreSQL the suite's earlier tests left rows of other customers, expired by now.)
    const counts = await purgeMagicLinkData(db, now);
    assert.ok(counts.accessTokens >= rows.filter((r) => r.expires_at < now).length);
    const left = await db.selectFrom('oauth_access_tokens').select('expires_at').where('customer_id', '=', customerId).execute();
    assert.deepEqual(left.map((r) => Number(r.expires_at)), rows.filter((r) => r.expires_at > now).map((r) => r.expires_at));
  });

  test('the server runs it once per cluster per interval', async (t) => {
    const env = await build(t, kind);
    const { db } = env.composition.store;
    assert.ok(env.composition.background.some((task) => task === env.composition.magicLinkPurge), 'the server starts it');
    const purged: unknown[] = [];
    const nodeA = magicLinkPurgeJob({ db, clock: env.clock, onPurged: (counts) => purged.push(counts) });
    const nodeB = magicLinkPurgeJob({ db, clock: env.clock, onPurged: (counts) => purged.push(counts) });
    // The server's own job may have claimed this interval already: move past it.
    env.clock.advance(DEFAULT_PURGE_INTERVAL_MS);
    assert.deepEqual([await nodeA.tick(), await nodeB.tick()], [true, false]);
    env.clock.advance(DEFAULT_PURGE_INTERVAL_MS);
    assert.deepEqual([await nodeB.tick(), await nodeA.tick()], [true, false]);
    assert.equal(purged.length, 2);
  });
});
