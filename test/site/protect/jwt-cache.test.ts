/** The verified-JWT cache: one signature check per token, failures never remembered, expiry exact. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createTestClock } from '../../../src/lib/clock.ts';
import { Unauthenticated } from '../../../src/lib/errors.ts';
import { cacheVerifiedJwts } from '../../../src/site/protect/jwt-cache.ts';
import { loadSiteJwtKeys } from '../../../src/site/protect/jwt-keys.ts';
import { createJwtIssuer, createJwtVerifier, type JwtVerifier } from '../../../src/site/protect/jwt.ts';

const START = Date.UTC(2026, 0, 15, 12);

async function setup(maxEntries?: number) {
  const clock = createTestClock(START);
  const keys = await loadSiteJwtKeys({ alg: 'HS256', masterKey: randomBytes(32), dataDir: '/nonexistent' });
  const claims = { keys, issuer: 'i', audience: 'a', clock };
  const real = createJwtVerifier(claims);
  let calls = 0;
  const counting: JwtVerifier = { verify: (token) => { calls += 1; return real.verify(token); } };
  const cached = cacheVerifiedJwts(counting, { clock, ...(maxEntries ? { maxEntries } : {}) });
  const issuer = createJwtIssuer({ ...claims, ttlSeconds: 60 });
  return { clock, real, cached, issuer, calls: () => calls };
}

test('a token is verified once, then served from the cache with the same claims', async () => {
  const { cached, issuer, calls } = await setup();
  const { token } = await issuer.issue({ sub: '1', name: 'a', ver: 1 });
  const first = await cached.verify(token);
  assert.deepEqual(await cached.verify(token), first);
  assert.equal(calls(), 1);
});

test('failures are not cached: a bad token is checked every time', async () => {
  const { cached, calls } = await setup();
  for (let i = 0; i < 2; i++) await assert.rejects(cached.verify('x.y.z'), (e: unknown) => e instanceof Unauthenticated && e.reason === 'SEGMENT_FAULT');
  assert.equal(calls(), 2);
});

test('expiry is exactly the verifier\'s: valid until exp + 30 s, then the verifier explains', async () => {
  const { clock, cached, real, issuer } = await setup();
  const { token, exp } = await issuer.issue({ sub: '1', name: 'a', ver: 1 });
  await cached.verify(token);
  clock.set((exp + 29) * 1000 + 999);
  await cached.verify(token);
  await real.verify(token);
  clock.set((exp + 30) * 1000);
  await assert.rejects(cached.verify(token), { reason: 'INVALID_TOKEN', message: 'JWT has expired.' });
  await assert.rejects(real.verify(token), { reason: 'INVALID_TOKEN', message: 'JWT has expired.' });
});

test('the cache is bounded: the oldest token is forgotten first', async () => {
  const { cached, issuer, calls } = await setup(2);
  const tokens = await Promise.all([1, 2, 3].map(async (n) => (await issuer.issue({ sub: String(n), name: 'a', ver: 1 })).token));
  for (const token of tokens) await cached.verify(token);
  await cached.verify(tokens[2]);
  await cached.verify(tokens[1]);
  assert.equal(calls(), 3);
  await cached.verify(tokens[0]);
  assert.equal(calls(), 4);
});
