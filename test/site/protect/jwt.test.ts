import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { calculateJwkThumbprint, createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import type { JWTPayload } from 'jose';
import { createTestClock } from '../../../src/lib/clock.ts';
import { Unauthenticated } from '../../../src/lib/errors.ts';
import { loadSiteJwtKeys, RS256_KEY_FILE } from '../../../src/site/protect/jwt-keys.ts';
import type { SiteJwtKeys } from '../../../src/site/protect/jwt-keys.ts';
import { createJwtIssuer, createJwtVerifier, MAX_JWT_LENGTH } from '../../../src/site/protect/jwt.ts';

const ISSUER = 'http://127.0.0.1:8081';
const AUDIENCE = 'http://127.0.0.1:8081/cms-json';
const TTL = 3600;
const START = Date.UTC(2026, 0, 15, 12, 0, 0);
const SUBJECT = { sub: '42', name: 'alice', ver: 3 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const root = await mkdtemp(join(tmpdir(), 'latchkey-jwt-'));
after(() => rm(root, { recursive: true, force: true }));
let dirCount = 0;
const freshDir = (): string => join(root, `d${++dirCount}`, 'nested');

const masterKey = randomBytes(32);
const hsKeys = await loadSiteJwtKeys({ alg: 'HS256', masterKey, dataDir: freshDir() });
const rsDir = freshDir();
const rsKeys = await loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: rsDir });

function setup(keys: SiteJwtKeys, overrides: { issuer?: string; audience?: string } = {}) {
  const clock = createTestClock(START);
  const issuer = createJwtIssuer({ keys, issuer: overrides.issuer ?? ISSUER, audience: overrides.audience ?? AUDIENCE, ttlSeconds: TTL, clock });
  const verifier = createJwtVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clock });
  return { clock, issuer, verifier };
}

async function rejectsWith(promise: Promise<unknown>, reason: string, description?: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof Unauthenticated, `expected Unauthenticated, got ${String(error)}`);
    assert.equal(error.reason, reason);
    assert.equal(error.method, 'jwt');
    if (description !== undefined) assert.equal(error.message, description);
    return true;
  });
}

const b64 = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A payload as the issuer writes it, for tokens forged with the right key. */
function validPayload(overrides: Record<string, unknown> = {}): JWTPayload {
  const iat = Math.floor(START / 1000);
  return { sub: '42', name: 'alice', ver: 3, iat, exp: iat + TTL, iss: ISSUER, aud: AUDIENCE, jti: 'a-jti', ...overrides };
}

/** Signs any payload with the real key, so only the claim checks can reject it. */
function forge(keys: SiteJwtKeys, payload: JWTPayload): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg: keys.alg, typ: 'JWT' }).sign(keys.signingKey);
}

for (const keys of [hsKeys, rsKeys]) {
  test(`${keys.alg}: round trip with exact iat and exp`, async () => {
    const { issuer, verifier } = setup(keys);
    const issued = await issuer.issue(SUBJECT);
    const iat = START / 1000;
    assert.equal(issued.iat, iat);
    assert.equal(issued.exp, iat + TTL);

    const verified = await verifier.verify(issued.token);
    assert.match(verified.jti, UUID);
    assert.deepEqual(verified, { sub: '42', name: 'alice', ver: 3, iat, exp: iat + TTL, jti: verified.jti });

    assert.deepEqual(decodeJwt(issued.token), { name: 'alice', ver: 3, sub: '42', iss: ISSUER, aud: AUDIENCE, iat, exp: iat + TTL, jti: verified.jti });
    const expectedHeader = keys.alg === 'RS256' ? { alg: 'RS256', typ: 'JWT', kid: keys.kid } : { alg: 'HS256', typ: 'JWT' };
    assert.deepEqual(decodeProtectedHeader(issued.token), expectedHeader);
  });

  test(`${keys.alg}: every token gets its own jti`, async () => {
    const { issuer, verifier } = setup(keys);
    const a = await verifier.verify((await issuer.issue(SUBJECT)).token);
    const b = await verifier.verify((await issuer.issue(SUBJECT)).token);
    assert.notEqual(a.jti, b.jti);
  });

  test(`${keys.alg}: tampered payload or signature is INVALID_SIGNATURE`, async () => {
    const { issuer, verifier } = setup(keys);
    const [header, payload, signature] = (await issuer.issue(SUBJECT)).token.split('.');
    const admin = b64({ ...validPayload(), sub: '1', name: 'admin' });
    await rejectsWith(verifier.verify(`${header}.${admin}.${signature}`), 'INVALID_SIGNATURE', 'JWT signature is invalid.');

    // The first character carries the top six bits of the first byte, so changing it always changes the signature.
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    await rejectsWith(verifier.verify(`${header}.${payload}.${flipped}`), 'INVALID_SIGNATURE', 'JWT signature is invalid.');
    await rejectsWith(verifier.verify(`${header}.${payload}.${signature.slice(0, -4)}`), 'INVALID_SIGNATURE', 'JWT signature is invalid.');
  });

  test(`${keys.alg}: alg none and other unsigned forms are INVALID_SIGNATURE (issue 13 item 5)`, async () => {
    const { issuer, verifier } = setup(keys);
    const real = (await issuer.issue(SUBJECT)).token.split('.');
    // The canonical unsecured JWT (RFC 7519 §6.1): header, payload and an empty signature segment.
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      const none = b64({ alg, typ: 'JWT' });
      await rejectsWith(verifier.verify(`${none}.${real[1]}.`), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
      await rejectsWith(verifier.verify(`${none}.${real[1]}.${real[2]}`), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
    }
    // Our own algorithm with the signature left out, and a header naming no algorithm.
    await rejectsWith(verifier.verify(`${real[0]}.${real[1]}.`), 'INVALID_SIGNATURE', 'JWT signature is invalid.');
    await rejectsWith(verifier.verify(`${b64({ typ: 'JWT' })}.${real[1]}.`), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
    await rejectsWith(verifier.verify(`${b64({ typ: 'JWT' })}.${real[1]}.${real[2]}`), 'INVALID_SIGNATURE');
    // Not three base64url segments of JSON: still a malformed JWT.
    await rejectsWith(verifier.verify(`${b64({ alg: 'none' })}.${real[1]}`), 'SEGMENT_FAULT', 'JWT format is incorrect.');
    await rejectsWith(verifier.verify(`${b64({ alg: 'none' })}..`), 'SEGMENT_FAULT', 'JWT format is incorrect.');
    await rejectsWith(verifier.verify(`${b64('not json')}.${real[1]}.`), 'SEGMENT_FAULT', 'JWT format is incorrect.');
  });

  test(`${keys.alg}: expired beyond the leeway is INVALID_TOKEN, within it is accepted`, async () => {
    const { clock, issuer, verifier } = setup(keys);
    const { token } = await issuer.issue(SUBJECT);
    clock.advance((TTL + 29) * 1000);
    assert.equal((await verifier.verify(token)).sub, '42');
    clock.advance(2 * 1000);
    await rejectsWith(verifier.verify(token), 'INVALID_TOKEN', 'JWT has expired.');
  });

  test(`${keys.alg}: issued in the future beyond the leeway is INVALID_TOKEN`, async () => {
    const { clock, issuer, verifier } = setup(keys);
    clock.advance(20 * 1000);
    const near = (await issuer.issue(SUBJECT)).token;
    clock.advance(40 * 1000);
    const far = (await issuer.issue(SUBJECT)).token;
    clock.set(START);
    assert.equal((await verifier.verify(near)).sub, '42');
    await rejectsWith(verifier.verify(far), 'INVALID_TOKEN', 'JWT is not yet valid.');
    await rejectsWith(verifier.verify(await forge(keys, validPayload({ nbf: START / 1000 + 120 }))), 'INVALID_TOKEN', 'JWT is not yet valid.');
    assert.equal((await verifier.verify(await forge(keys, validPayload({ nbf: START / 1000 + 20 })))).sub, '42');
  });

  test(`${keys.alg}: wrong iss or aud is INVALID_TOKEN`, async () => {
    const { verifier } = setup(keys);
    const otherIssuer = setup(keys, { issuer: 'http://elsewhere' }).issuer;
    const otherAudience = setup(keys, { audience: 'http://elsewhere' }).issuer;
    await rejectsWith(verifier.verify((await otherIssuer.issue(SUBJECT)).token), 'INVALID_TOKEN', 'JWT issuer is invalid.');
    await rejectsWith(verifier.verify((await otherAudience.issue(SUBJECT)).token), 'INVALID_TOKEN', 'JWT audience is invalid.');
    assert.equal((await verifier.verify(await forge(keys, validPayload({ aud: ['x', AUDIENCE] })))).sub, '42');
  });

  test(`${keys.alg}: missing or ill-typed claims are INVALID_TOKEN`, async () => {
    const { verifier } = setup(keys);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ sub: undefined }, 'JWT is missing the "sub" claim.'],
      [{ sub: 42 }, 'JWT "sub" claim is invalid.'],
      [{ sub: '' }, 'JWT "sub" claim is invalid.'],
      [{ name: undefined }, 'JWT is missing the "name" claim.'],
      [{ name: ['alice'] }, 'JWT "name" claim is invalid.'],
      [{ ver: undefined }, 'JWT is missing the "ver" claim.'],
      [{ ver: '3' }, 'JWT "ver" claim is invalid.'],
      [{ ver: -1 }, 'JWT "ver" claim is invalid.'],
      [{ ver: 1.5 }, 'JWT "ver" claim is invalid.'],
      [{ exp: undefined }, 'JWT is missing the "exp" claim.'],
      [{ exp: 'never' }, 'JWT "exp" claim is invalid.'],
      [{ iat: undefined }, 'JWT is missing the "iat" claim.'],
      [{ jti: undefined }, 'JWT is missing the "jti" claim.'],
      [{ jti: 7 }, 'JWT "jti" claim is invalid.'],
      [{ iss: undefined }, 'JWT is missing the "iss" claim.'],
      [{ aud: undefined }, 'JWT is missing the "aud" claim.'],
    ];
    for (const [overrides, description] of cases) {
      const payload = validPayload();
      for (const [claim, value] of Object.entries(overrides)) {
        if (value === undefined) delete payload[claim];
        else payload[claim] = value;
      }
      await rejectsWith(verifier.verify(await forge(keys, payload)), 'INVALID_TOKEN', description);
    }
    // JSON's 1e400 parses as Infinity; jose would let it through as a never-expiring token.
    const [header] = (await forge(keys, validPayload())).split('.');
    const body = b64(JSON.stringify(validPayload()).replace(/"exp":\d+/, '"exp":1e400'));
    const signed = keys.alg === 'HS256'
      ? createHmac('sha256', keys.signingKey.export()).update(`${header}.${body}`).digest('base64url')
      : sign('sha256', Buffer.from(`${header}.${body}`), keys.signingKey).toString('base64url');
    await rejectsWith(verifier.verify(`${header}.${body}.${signed}`), 'INVALID_TOKEN', 'JWT "exp" claim is invalid.');
  });

  test(`${keys.alg}: malformed tokens are SEGMENT_FAULT`, async () => {
    const { issuer, verifier } = setup(keys);
    const [h, p, s] = (await issuer.issue(SUBJECT)).token.split('.');
    const malformed = [
      '',
      'abc',
      `${h}.${p}`,
      `${h}.${p}.${s}.${s}`,
      `${h}..${s}`,
      `.${p}.${s}`,
      '..',
      `${h}.${p}.${s}=`,
      `${h}=.${p}.${s}`,
      `${h}.${p}.${s.slice(0, 10)}+${s.slice(11)}`,
      `${h}.${p}.${s.slice(0, 10)}/${s.slice(11)}`,
      `${h} .${p}.${s}`,
      `${b64('not json')}.${p}.${s}`,
      `${b64('[1,2]')}.${p}.${s}`,
      `${b64('null')}.${p}.${s}`,
      `${b64('"HS256"')}.${p}.${s}`,
      `${h}.${b64('not json')}.${s}`,
      `${h}.${b64('[]')}.${s}`,
      `${h}.${b64('42')}.${s}`,
      `${Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url')}.${p}.${s}`,
      `${h}.${p.padEnd(MAX_JWT_LENGTH, 'A')}.${s}`,
      'x'.repeat(1_000_000),
    ];
    for (const token of malformed) {
      await rejectsWith(verifier.verify(token), 'SEGMENT_FAULT', 'JWT format is incorrect.');
    }
    // A segment of 4n+1 characters cannot be base64url.
    const oneExtra = 'A'.repeat(4 * Math.ceil(s.length / 4) + 1);
    await rejectsWith(verifier.verify(`${h}.${p}.${oneExtra}`), 'SEGMENT_FAULT');
    await rejectsWith(verifier.verify(undefined as unknown as string), 'SEGMENT_FAULT');
  });

  test(`${keys.alg}: a token signed by another key is INVALID_SIGNATURE`, async () => {
    const other = keys.alg === 'HS256'
      ? await loadSiteJwtKeys({ alg: 'HS256', masterKey: randomBytes(32), dataDir: freshDir() })
      : await loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: freshDir(), privateKeyPem: rsaPem(2048) });
    const token = (await setup(other).issuer.issue(SUBJECT)).token;
    // Another RSA key has another kid: refused by its kid before the signature is checked.
    await rejectsWith(setup(keys).verifier.verify(token), 'INVALID_SIGNATURE',
      keys.alg === 'RS256' ? 'JWT key id is not in the key set.' : 'JWT signature is invalid.');
  });

  test(`${keys.alg}: random input never throws anything but the three site errors`, async () => {
    const { verifier } = setup(keys);
    const allowed = new Set(['SEGMENT_FAULT', 'INVALID_SIGNATURE', 'INVALID_TOKEN']);
    const check = async (token: string): Promise<void> => {
      try {
        await verifier.verify(token);
      } catch (error) {
        if (!(error instanceof Unauthenticated) || !allowed.has(error.reason) || error.method !== 'jwt') throw error;
        return;
      }
      throw new Error(`accepted ${token}`);
    };
    const segment = fc.oneof(fc.string(), fc.stringMatching(/^[A-Za-z0-9_-]*$/), fc.base64String());
    const jsonSegment = fc.dictionary(fc.string(), fc.jsonValue()).map((value) => b64(value));
    const headerSegment = fc.record({
      alg: fc.constantFrom(keys.alg, 'none', 'HS256', 'RS256', 'RS512', 'ES256', ''),
      typ: fc.constantFrom('JWT', undefined),
      crit: fc.option(fc.array(fc.string()), { nil: undefined }),
      b64: fc.option(fc.boolean(), { nil: undefined }),
    }, { requiredKeys: ['alg'] }).map((value) => b64(value));
    const payloadSegment = fc.record({
      sub: fc.oneof(fc.string(), fc.integer()),
      name: fc.string(),
      ver: fc.oneof(fc.integer(), fc.double()),
      iat: fc.oneof(fc.integer(), fc.double()),
      exp: fc.oneof(fc.integer(), fc.double(), fc.string()),
      iss: fc.constantFrom(ISSUER, 'x'),
      aud: fc.constantFrom(AUDIENCE, 'x'),
    }).map((value) => b64(value));

    await fc.assert(fc.asyncProperty(fc.string({ unit: 'binary' }), check), { numRuns: 300 });
    await fc.assert(fc.asyncProperty(fc.tuple(segment, segment, segment), async (parts) => check(parts.join('.'))), { numRuns: 300 });
    await fc.assert(fc.asyncProperty(fc.tuple(fc.oneof(headerSegment, jsonSegment), fc.oneof(payloadSegment, jsonSegment), segment),
      async (parts) => check(parts.join('.'))), { numRuns: 300 });
  });
}

function rsaPem(modulusLength: number): string {
  return generateKeyPairSync('rsa', { modulusLength }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

test('HS256: the secret is derived from the master key, so nodes sharing it share tokens', async () => {
  const again = await loadSiteJwtKeys({ alg: 'HS256', masterKey: Buffer.from(masterKey), dataDir: freshDir() });
  assert.equal(again.kid, undefined);
  const token = (await setup(hsKeys).issuer.issue(SUBJECT)).token;
  assert.equal((await setup(again).verifier.verify(token)).name, 'alice');
  await assert.rejects(loadSiteJwtKeys({ alg: 'HS256', masterKey: randomBytes(16), dataDir: freshDir() }), /32 bytes/);
});

test('jwks(): HS256 publishes nothing; RS256 publishes the public key only', async () => {
  assert.deepEqual(hsKeys.jwks(), { keys: [] });

  const jwks = rsKeys.jwks();
  assert.equal(jwks.keys.length, 1);
  const [jwk] = jwks.keys;
  assert.deepEqual(Object.keys(jwk).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
  assert.equal(jwk.kty, 'RSA');
  assert.equal(jwk.alg, 'RS256');
  assert.equal(jwk.use, 'sig');
  assert.equal(jwk.kid, rsKeys.kid);
  assert.equal(jwk.kid, await calculateJwkThumbprint({ kty: 'RSA', n: jwk.n, e: jwk.e }));

  // What a relying party does with it: pick the key by kid from the published set.
  const token = (await setup(rsKeys).issuer.issue(SUBJECT)).token;
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), { currentDate: new Date(START) });
  assert.equal(payload.sub, '42');

  // A caller mutating the result must not change what is served next.
  jwk.n = 'x';
  assert.notEqual(rsKeys.jwks().keys[0].n, 'x');
});

test('RS256: the key is generated once, private, and reused on the next load', async () => {
  const path = join(rsDir, RS256_KEY_FILE);
  const pem = await readFile(path, 'utf8');
  assert.match(pem, /^-----BEGIN PRIVATE KEY-----/);
  assert.equal((await stat(path)).mode & 0o777, 0o600);

  const again = await loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: rsDir });
  assert.equal(again.kid, rsKeys.kid);
  assert.equal(await readFile(path, 'utf8'), pem);
  assert.deepEqual(await readdir(rsDir), [RS256_KEY_FILE]);

  const token = (await setup(rsKeys).issuer.issue(SUBJECT)).token;
  assert.equal((await setup(again).verifier.verify(token)).sub, '42');
});

test('RS256: loads starting together end up with one key', async () => {
  const dir = freshDir();
  const loaded = await Promise.all([1, 2, 3].map(() => loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir })));
  assert.equal(new Set(loaded.map((k) => k.kid)).size, 1);
  assert.deepEqual(await readdir(dir), [RS256_KEY_FILE]);
  const onDisk = await loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir });
  assert.equal(onDisk.kid, loaded[0].kid);
});

test('RS256: a configured PEM is used instead of the data dir, and weak or non-RSA keys are refused', async () => {
  const dir = freshDir();
  const keys = await loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir, privateKeyPem: rsaPem(2048) });
  assert.equal(keys.kid, keys.jwks().keys[0].kid);
  assert.notEqual(keys.kid, rsKeys.kid);
  await assert.rejects(stat(dir), { code: 'ENOENT' });

  await assert.rejects(loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir, privateKeyPem: rsaPem(1024) }), /at least 2048 bits/);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  await assert.rejects(loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir, privateKeyPem: ec }), /RSA key/);
  await assert.rejects(loadSiteJwtKeys({ alg: 'RS256', masterKey, dataDir: dir, privateKeyPem: 'not a pem' }), /private key PEM/);
});

test('RS256: HS256 keyed with the public key PEM, or another RSA algorithm, is INVALID_SIGNATURE', async () => {
  const { verifier } = setup(rsKeys);
  const publicPem = rsKeys.verificationKey.export({ type: 'spki', format: 'pem' }) as string;
  const payload = b64(validPayload());
  for (const secret of [publicPem, publicPem.trim()]) {
    const header = b64({ alg: 'HS256', typ: 'JWT', kid: rsKeys.kid });
    const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
    await rejectsWith(verifier.verify(`${header}.${payload}.${signature}`), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
  }
  const rs512 = await new SignJWT(validPayload()).setProtectedHeader({ alg: 'RS512', kid: rsKeys.kid }).sign(rsKeys.signingKey);
  await rejectsWith(verifier.verify(rs512), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
  const ps256 = await new SignJWT(validPayload()).setProtectedHeader({ alg: 'PS256' }).sign(rsKeys.signingKey);
  await rejectsWith(verifier.verify(ps256), 'INVALID_SIGNATURE');
});

test('RS256: a kid that is not in the key set is INVALID_SIGNATURE, even with the right signature (issue 13 item 5)', async () => {
  const { verifier } = setup(rsKeys);
  const sign = (header: Record<string, unknown>) => new SignJWT(validPayload()).setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...header }).sign(rsKeys.signingKey);
  for (const kid of ['another-key', `${rsKeys.kid}x`, '', rsKeys.kid!.toUpperCase()]) {
    await rejectsWith(verifier.verify(await sign({ kid })), 'INVALID_SIGNATURE', 'JWT key id is not in the key set.');
  }
  for (const kid of [42, null, [rsKeys.kid], { kid: rsKeys.kid }]) {
    await rejectsWith(verifier.verify(await sign({ kid })), 'INVALID_SIGNATURE', 'JWT key id is not in the key set.');
  }
  assert.equal((await verifier.verify(await sign({ kid: rsKeys.kid }))).sub, '42', 'the published kid passes');
});

test('HS256: an RS256 token is INVALID_SIGNATURE', async () => {
  const token = (await setup(rsKeys).issuer.issue(SUBJECT)).token;
  await rejectsWith(setup(hsKeys).verifier.verify(token), 'INVALID_SIGNATURE', 'JWT algorithm is not allowed.');
});

test('an unrecognised crit extension is refused', async () => {
  const { verifier } = setup(hsKeys);
  const token = await new SignJWT(validPayload())
    .setProtectedHeader({ alg: 'HS256', crit: ['exp-ext'], 'exp-ext': true })
    .sign(hsKeys.signingKey, { crit: { 'exp-ext': true } });
  await rejectsWith(verifier.verify(token), 'INVALID_SIGNATURE');
});

test('the issuer refuses bad input rather than minting tokens the verifier rejects', async () => {
  const { issuer } = setup(hsKeys);
  await assert.rejects(issuer.issue({ ...SUBJECT, sub: '' }), TypeError);
  await assert.rejects(issuer.issue({ ...SUBJECT, name: '' }), TypeError);
  await assert.rejects(issuer.issue({ ...SUBJECT, ver: -1 }), TypeError);
  await assert.rejects(issuer.issue({ ...SUBJECT, ver: 0.5 }), TypeError);
  assert.throws(() => createJwtIssuer({ keys: hsKeys, issuer: ISSUER, audience: AUDIENCE, ttlSeconds: 0, clock: createTestClock() }), /ttlSeconds/);
  assert.throws(() => createJwtVerifier({ keys: hsKeys, issuer: ISSUER, audience: AUDIENCE, clock: createTestClock(), leewaySeconds: -1 }), /leewaySeconds/);
});
