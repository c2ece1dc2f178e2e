/**
 * Issue 24's figure: the hosted sign-in's password step (one argon2id verify, the SSO session opened,
 * the 303 back to the protocol answered) against the raw argon2id verify rate at the same
 * concurrency, in interleaved slices. Flows are written straight into sign_in_flows at their password
 * step (bench only), all bound to one browser value, spread over the seeded users so the per-user
 * throttle never sees more than one attempt at a time.
 */
import { randomBytes } from 'node:crypto';
import { SYSTEM } from '../../src/audit/context.ts';
import { sha256Hex } from '../../src/lib/tokens.ts';
import type { Bench, Scenario } from '../harness.ts';
import { BENCH_PASSWORD, benchUsername } from '../seed.ts';
import { checkAgainstArgon2 } from './site.ts';

const RETURN_URL = 'https://app.bench.example/sso/return';

async function preparedFlows(bench: Bench, count: number): Promise<{ flowIds: string[]; binding: string }> {
  const { db } = bench.composition.store;
  const { applications, policies } = bench.composition.services;
  const customerId = bench.customer.customerId;
  const { application } = await applications.create(customerId, { name: 'Bench sign-in', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
  await policies.create(customerId, { applicationUuid: application.uuid, firstFactor: 'PASSWORD', secondFactor: 'NONE' }, SYSTEM);
  const spread = Math.min(bench.users, 5_000);
  const users = await db.selectFrom('users').select(['id', 'username']).where('customer_id', '=', customerId)
    .where('username', 'in', Array.from({ length: spread }, (_, i) => benchUsername(i + 1))).execute();
  const binding = randomBytes(32).toString('base64url');
  const now = Date.now();
  const returnTo = `${bench.composition.services.oidc.customerIssuer(bench.customer.customerKey)}/jwt/authorize?client_id=${application.uuid}&redirect_uri=${encodeURIComponent(RETURN_URL)}`;
  const flowIds: string[] = [];
  let rows = [];
  for (let i = 0; i < count; i++) {
    const flowId = randomBytes(32).toString('base64url');
    const user = users[i % users.length]!;
    flowIds.push(flowId);
    rows.push({
      id_hash: sha256Hex(flowId), customer_id: customerId, application_id: application.id, application_uuid: application.uuid,
      return_to: returnTo, browser_hash: sha256Hex(binding), user_id: Number(user.id), login: user.username, step: 'password',
      amr: '[]', link_id: null, code_hash: null, code_attempts: 0, created_at: now, expires_at: now + 24 * 3600_000,
    });
    if (rows.length === 500 || i === count - 1) {
      await db.insertInto('sign_in_flows').values(rows).execute();
      rows = [];
    }
  }
  return { flowIds, binding };
}

export const signInPassword: Scenario = {
  name: 'sign-in-password',
  summary: 'POST the sign-in page\'s password step (argon2id verify, SSO session opened, 303) vs the raw argon2id verify rate, same concurrency',
  async run(bench) {
    const count = 300 * (bench.options.warmupSeconds + bench.options.durationSeconds) + 500;
    const started = Date.now();
    const { flowIds, binding } = await preparedFlows(bench, count);
    bench.note(`${count.toLocaleString('en-US')} flows at their password step written straight into sign_in_flows (bench only) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const base = `/customers/${bench.customer.customerKey}/sign-in`;
    let next = 0;
    await checkAgainstArgon2(bench, 'sign-in password step', {
      face: 'identity', method: 'POST', path: `${base}/-`, okStatus: 303,
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `lk_signin=${binding}` },
      body: new URLSearchParams({ password: BENCH_PASSWORD }).toString(),
      dynamicPath: () => `${base}/${flowIds[next++] ?? 'used-up'}`,
    }, 'sign-ins/s ÷ raw argon2id verifies/s', 'sign-ins', 'issue 24');
    if (next > flowIds.length) bench.note(`the prepared flows ran out (${next - flowIds.length} requests got 410): raise the count in bench/scenarios/sign-in.ts`);
  },
};
