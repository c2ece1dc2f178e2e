/** Customer signing keys: created once per customer (also when nodes race), sealed at rest, verifying what they sign. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { createSigningKeysService } from '../../src/identity/signing-keys/service.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('customer signing keys', (kind) => {
  test('one key per customer, created once when two nodes race, the same on both, private half sealed', async (t) => {
    const app = await build(t, kind);
    const { db } = app.composition.store;
    const sealer = createSealer(app.composition.masterKey);
    const nodeA = createSigningKeysService({ db, sealer });
    const nodeB = createSigningKeysService({ db, sealer });
    const customerId = app.customer.customerId;
    const [a, b] = await Promise.all([nodeA.jwks(customerId), nodeB.jwks(customerId)]);
    assert.deepStrictEqual(a, b);
    assert.equal(a.keys.length, 1);
    const [key] = a.keys;
    assert.deepStrictEqual(Object.keys(key!).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
    assert.equal(key!.alg, 'RS256');
    const rows = await db.selectFrom('customer_signing_keys').selectAll().where('customer_id', '=', customerId).execute();
    assert.equal(rows.length, 1);
    const privateJwk = (await nodeA.privateJwks(customerId)).keys[0]!;
    assert.ok(privateJwk.d && privateJwk.p && privateJwk.q);
    for (const secret of [privateJwk.d, privateJwk.p, privateJwk.q, privateJwk.dp, privateJwk.dq]) {
      assert.ok(!JSON.stringify(rows).includes(secret!), 'a private key part is stored in clear');
    }
    // Another customer gets another key.
    const other = await app.newCustomer();
    assert.notEqual((await nodeA.jwks(other.customer.customerId)).keys[0]!.kid, key!.kid);
    // Under another master key the sealed key does not open.
    const stranger = createSigningKeysService({ db, sealer: createSealer(randomBytes(32)) });
    await assert.rejects(stranger.jwks(customerId));
  });

  test('signJwt: RS256 with the kid, iat/exp from the TTL, verified by the public JWKS', async (t) => {
    const app = await build(t, kind);
    const keys = createSigningKeysService({ db: app.composition.store.db, sealer: createSealer(app.composition.masterKey) });
    const customerId = app.customer.customerId;
    const token = await keys.signJwt(customerId, { iss: 'https://issuer.test', aud: 'app', sub: '7', email: 'u@example.test' }, { ttlSeconds: 300 });
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(await keys.jwks(customerId)), { issuer: 'https://issuer.test', audience: 'app' });
    assert.equal(protectedHeader.alg, 'RS256');
    assert.equal(protectedHeader.kid, (await keys.jwks(customerId)).keys[0]!.kid);
    assert.equal(payload.exp! - payload.iat!, 300);
    assert.equal(payload.sub, '7');
    assert.match(String(payload.jti), /^[0-9a-f-]{36}$/);
    const other = await app.newCustomer();
    await assert.rejects(jwtVerify(token, createLocalJWKSet(await keys.jwks(other.customer.customerId))));
  });
});
