/**
 * Issue 4's figures: GET posts (20) with an HS256 JWT, an RS256 JWT and an API key, each against a
 * ceiling serving the same 20 posts with no credential check; and the token endpoint's logins/s
 * against the raw argon2id verify rate at the same concurrency.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SYSTEM } from '../../src/audit/context.ts';
import { API_KEYS_PATH } from '../../src/site/api-keys/routes.ts';
import { startEnvironment } from '../ipc-child.ts';
import type { DrivenLoad } from '../flows.ts';
import type { Bench, MeasurementRow, Scenario } from '../harness.ts';
import type { RequestSpec } from '../load.ts';
import { ensurePosts, login, POSTS_PATH, SITE_PASSWORD, SITE_USER, siteCredential, siteLoginUsers, siteSide, TOKEN_PATH } from './site-setup.ts';

const run = promisify(execFile);

export const sitePosts: Scenario = {
  name: 'site-posts',
  summary: 'GET 20 posts with an HS256 JWT, an RS256 JWT and a user API key, each vs a ceiling',
  async run(bench) {
    await ensurePosts(bench, 20);
    const target = { op: '>=' as const, threshold: bench.store === 'postgres' ? 0.6 : 0.75, source: 'issue 29 (issue 4 asked 0.6)' };
    const hs256 = await login(bench, 'site');
    await bench.compare('posts, HS256 JWT', bench.site('GET', POSTS_PATH, { headers: { authorization: `Bearer ${hs256}` } }), target);
    const rs256 = await login(bench, 'siteRs256');
    await bench.compare('posts, RS256 JWT', bench.site('GET', POSTS_PATH, { face: 'siteRs256', headers: { authorization: `Bearer ${rs256}` } }), target);
    const { apiKey } = await bench.composition.services.siteApiKeys.create(bench.customer.customerId, { login: SITE_USER, name: 'bench' }, SYSTEM);
    await bench.compare('posts, API key', bench.site('GET', POSTS_PATH, { headers: { authorization: `Bearer ${apiKey}` } }), target);
  },
  // Side by side: each server's own user, posts, JWTs and API key, made through its wire.
  async sideBySide(side) {
    const { hs256, rs256 } = await siteSide(side, 20);
    const apiKey = await siteCredential(side, hs256, API_KEYS_PATH, { name: 'bench' }, 'apiKey');
    return [
      { label: 'posts, HS256 JWT', spec: side.site('GET', POSTS_PATH, { headers: { authorization: `Bearer ${hs256}` } }) },
      { label: 'posts, RS256 JWT', spec: side.site('GET', POSTS_PATH, { face: 'siteRs256', headers: { authorization: `Bearer ${rs256}` } }) },
      { label: 'posts, API key', spec: side.site('GET', POSTS_PATH, { headers: { authorization: `Bearer ${apiKey}` } }) },
    ];
  },
};

/**
 * Measures `spec` (one argon2id verify per request, or per iteration of a driven flow) and, in slices
 * between its slices, the raw argon2id verify rate at the same concurrency, so drifting background
 * load hits both alike.
 */
export async function measureBesideArgon2(bench: Bench, label: string, spec: RequestSpec | DrivenLoad): Promise<{ real: MeasurementRow; verifiesPerSecond: number }> {
  const argon2Rate = fileURLToPath(new URL('../argon2-rate.ts', import.meta.url));
  let rateSeconds = 0;
  let rateVerifies = 0;
  const { real } = await bench.measure(label, spec, {
    between: async (seconds) => {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', argon2Rate, '--concurrency', String(bench.options.connections), '--seconds', String(seconds)], {
        // With the server's allocator settings: they decide what argon2id's 19 MiB blocks cost.
        env: { ...process.env, ...startEnvironment() },
      });
      rateVerifies += (JSON.parse(stdout) as { verifiesPerSecond: number }).verifiesPerSecond * seconds;
      rateSeconds += seconds;
    },
  });
  return { real, verifiesPerSecond: rateVerifies / rateSeconds };
}

/** measureBesideArgon2, and the check of their ratio (at least 0.85). */
export async function checkAgainstArgon2(bench: Bench, label: string, spec: RequestSpec, ratioLabel: string, per: string, source: string): Promise<void> {
  const { real, verifiesPerSecond } = await measureBesideArgon2(bench, label, spec);
  bench.check(ratioLabel, real.requestsPerSecond / verifiesPerSecond, 'x', { op: '>=', threshold: 0.85, source },
    `${real.requestsPerSecond.toFixed(1)} ${per}/s vs ${verifiesPerSecond.toFixed(1)} raw verifies/s at ${bench.options.connections} concurrent`);
}

export const siteLogin: Scenario = {
  name: 'site-login',
  summary: 'POST the token endpoint (one argon2id verify per login) vs the raw argon2id verify rate, same concurrency',
  async run(bench) {
    // A login first: the user exists and the password is right (a failure would count against the throttle).
    await login(bench, 'site');
    // One user per connection, taken in turn: no user has more logins in flight than its throttle allows.
    const usernames = await siteLoginUsers(bench, bench.options.connections);
    let next = 0;
    await checkAgainstArgon2(bench, 'token endpoint logins', bench.site('POST', TOKEN_PATH, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      dynamicBody: () => new URLSearchParams({ username: usernames[next++ % usernames.length]!, password: SITE_PASSWORD }).toString(),
    }), 'logins/s ÷ raw argon2id verifies/s', 'logins', 'issue 4');
  },
};
