/**
 * kill -9 during write loops (issue 17 part 3), on SQLite and PostgreSQL: a real server process takes
 * four loops of writes (users/create, groups/members/update, site API-token create, magic-link
 * generate), is SIGKILLed mid-loop, and is started again on the same data. Every acknowledged (2xx)
 * write is there, and nothing is half written: no user outside the default group, no membership of a
 * missing user, no magic link without its outbox mail nor a mail without its link, and an
 * acknowledged API token opens the site after the restart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { SYSTEM } from '../../src/audit/context.ts';
import {
  admin, freshDatabase, kinds, PASSWORD, serverEnv, siteJwt, sleep, startServer, withComposition, type Customer, type ServerProcess,
} from './harness.ts';

const MEMBERS = 120;
const INVITEES = 120;
const RETURN_URL = 'https://app.example.test/back';

for (const kind of kinds) {
  test(`${kind}: SIGKILL mid-write loses no acknowledged write and leaves no half write`, async (t) => {
    const { url, dir } = await freshDatabase(t, kind);
    const env = await serverEnv(url, dir, { LATCHKEY_SITE_API_TOKEN_MAX_PER_USER: '10000' });
    let customer!: Customer;
    let applicationUuid = '';
    await withComposition(env, async (app) => {
      customer = await app.services.customers.create({ email: 'faults-owner@example.test' });
      const users = app.services.users;
      await users.create(customer.customerId, { username: 'owner', email: 'owner@example.test', firstName: 'O', lastName: 'W', password: PASSWORD, customAttributes: {} }, SYSTEM);
      await app.services.groups.upsert(customer.customerId, [{ name: 'team', isDefault: false, attributes: {} }], SYSTEM);
      for (let i = 0; i < MEMBERS; i++) {
        await users.create(customer.customerId, { username: `m${i}`, email: `m${i}@example.test`, firstName: 'M', lastName: 'M', customAttributes: {} }, SYSTEM);
      }
      for (let i = 0; i < INVITEES; i++) {
        await users.create(customer.customerId, { username: `i${i}`, email: `i${i}@example.test`, firstName: 'I', lastName: 'I', customAttributes: {} }, SYSTEM);
      }
      const { application } = await app.services.applications.create(customer.customerId, { name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
      applicationUuid = application.uuid;
      await app.services.policies.create(customer.customerId, { applicationUuid, firstFactor: 'MAGIC_LINK', secondFactor: 'NONE' }, SYSTEM);
    });
    const siteEnv = { ...env, LATCHKEY_SITE_CUSTOMER_KEY: customer.customerKey };
    const server = await startServer(t, siteEnv);
    const jwt = await siteJwt(server.siteUrl, 'owner');

    const acked = { users: [] as string[], members: [] as string[], tokens: [] as { name: string; token: string }[], invitees: [] as string[] };
    const failures: string[] = [];
    let alive = true;
    /** Two workers per kind of write, each sending the next write once it has its answer, until the server is gone. */
    const loop = (next: () => (() => Promise<void>) | undefined) => Promise.all([0, 1].map(async () => {
      while (alive) {
        const write = next();
        if (!write) return;
        try {
          await write();
        } catch (error) {
          // The connection broke under the kill: the write's outcome is unknown, either is allowed.
          if (alive) failures.push(String((error as { cause?: unknown }).cause ?? error));
          return;
        }
      }
    }));
    const expect2xx = async (what: string, response: Response): Promise<unknown> => {
      const body = await response.json();
      if (response.status < 200 || response.status > 299) {
        if (alive) failures.push(`${what}: ${response.status} ${JSON.stringify(body)}`);
        return undefined;
      }
      return body;
    };
    let userN = 0; let memberN = 0; let tokenN = 0; let inviteeN = 0;
    const loops = Promise.all([
      loop(() => {
        const username = `k${userN++}`;
        return async () => {
          const res = await admin(server.identityUrl, customer, '/users/create', { username, email: `${username}@example.test`, firstName: 'K', lastName: 'L' });
          if (await expect2xx(username, res)) acked.users.push(username);
        };
      }),
      loop(() => {
        const i = memberN++;
        if (i >= MEMBERS) return undefined;
        return async () => {
          const res = await admin(server.identityUrl, customer, '/groups/members/update', { groupName: 'team', users: [{ primaryEmail: `m${i}@example.test` }] });
          if (await expect2xx(`m${i}`, res)) acked.members.push(`m${i}`);
        };
      }),
      loop(() => {
        const name = `t${tokenN++}`;
        return async () => {
          const res = await fetch(`${server.siteUrl}/rest/api/2/tokens`, {
            method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name, type: 'bearer' }), signal: AbortSignal.timeout(10_000),
          });
          const body = await expect2xx(name, res) as { token?: string } | undefined;
          if (body?.token) acked.tokens.push({ name, token: body.token });
        };
      }),
      loop(() => {
        const i = inviteeN++;
        if (i >= INVITEES) return undefined;
        return async () => {
          const res = await admin(server.identityUrl, customer, '/magiclink/generate', { username: `i${i}`, applicationUuid, redirectUri: RETURN_URL });
          if (await expect2xx(`i${i}`, res)) acked.invitees.push(`i${i}`);
        };
      }),
    ]);

    // Kill once every loop has some acknowledged writes (so the kill lands mid-loop, not before it).
    const started = Date.now();
    while (Date.now() - started < 20_000 && [acked.users, acked.members, acked.tokens, acked.invitees].some((list) => list.length < 15)) await sleep(20);
    await sleep(Math.floor(Math.random() * 200));
    alive = false;
    await server.kill9();
    await loops;
    assert.deepEqual(failures, [], 'every write before the kill succeeded');
    t.diagnostic(`acknowledged before the kill: ${acked.users.length} users, ${acked.members.length} memberships, ${acked.tokens.length} API tokens, ${acked.invitees.length} magic links`);
    for (const list of Object.values(acked)) assert.ok(list.length >= 15);

    const again: ServerProcess = await server.restart();
    await withComposition(env, async (app) => {
      const db = app.store.db;
      const cid = customer.customerId;
      const names = async (query: ReturnType<typeof sql<{ name: string }>>) => new Set((await query.execute(db)).rows.map((r) => r.name));

      const users = await names(sql<{ name: string }>`select username as name from users where customer_id = ${cid}`);
      assert.deepEqual(acked.users.filter((u) => !users.has(u)), [], 'acknowledged users are present');
      const outsideDefault = await names(sql<{ name: string }>`select u.username as name from users u where u.customer_id = ${cid} and not exists (
        select 1 from group_members gm join groups g on g.id = gm.group_id where gm.user_id = u.id and g.is_default = 1)`);
      assert.deepEqual([...outsideDefault], [], 'every user is in the default group');
      const dangling = await names(sql<{ name: string }>`select cast(gm.id as text) as name from group_members gm left join users u on u.id = gm.user_id where gm.customer_id = ${cid} and u.id is null`);
      assert.deepEqual([...dangling], [], 'no membership of a missing user');

      const team = await names(sql<{ name: string }>`select u.username as name from group_members gm join groups g on g.id = gm.group_id join users u on u.id = gm.user_id
        where g.customer_id = ${cid} and g.name = 'team'`);
      assert.deepEqual(acked.members.filter((m) => !team.has(m)), [], 'acknowledged memberships are present');

      const tokens = await names(sql<{ name: string }>`select t.name as name from api_tokens t join users u on u.id = t.user_id where t.customer_id = ${cid} and u.username = 'owner'`);
      assert.deepEqual(acked.tokens.map((x) => x.name).filter((n) => !tokens.has(n)), [], 'acknowledged API tokens are present');

      // Per invitee: as many links as mails (none of either, or both), and one for each acknowledged generate.
      const pairs = (await sql<{ name: string; links: number; mails: number }>`select u.username as name,
          (select count(*) from magic_links l where l.user_id = u.id) as links,
          (select count(*) from mail_outbox o where o.customer_id = ${cid} and o.to_address = u.email) as mails
        from users u where u.customer_id = ${cid} and u.username like 'i%'`.execute(db)).rows;
      const half = pairs.filter((p) => Number(p.links) !== Number(p.mails));
      assert.deepEqual(half, [], 'no link without its mail, no mail without its link');
      const linked = new Set(pairs.filter((p) => Number(p.links) === 1).map((p) => p.name));
      assert.deepEqual(acked.invitees.filter((i) => !linked.has(i)), [], 'acknowledged magic links are present');
    });

    // The restarted server serves: an acknowledged token opens the site, and writes go on.
    const last = acked.tokens.at(-1)!;
    const myself = await fetch(`${again.siteUrl}/rest/api/2/myself`, { headers: { authorization: `Bearer ${last.token}` } });
    assert.equal(myself.status, 200, await myself.text());
    assert.equal((await admin(again.identityUrl, customer, '/users/create', { username: 'after', email: 'after@example.test', firstName: 'A', lastName: 'F' })).status, 200);
  });
}
