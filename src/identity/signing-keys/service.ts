/**
 * Each customer's RS256 signing key: it signs the JWT application's id_token and the customer's OpenID
 * provider's tokens, and its public half is served at the provider's jwks_uri. Created on first use
 * (race-safe: one row per customer, insert-or-read), the private JWK sealed under the master key.
 * No rotation yet: a customer keeps one key. SAML signs with the same key, its public half in a
 * self-signed certificate (the customer's SAML metadata).
 */
import { createPrivateKey, randomUUID, type JsonWebKey } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import type { Kysely } from 'kysely';
import { systemClock, type Clock } from '../../lib/clock.ts';
import type { Sealer } from '../../lib/seal.ts';
import { selfSignedCertificate, type SamlSigning } from '../saml/certificate.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';

export type { SamlSigning } from '../saml/certificate.ts';

export const SIGNING_ALG = 'RS256';

export interface SignJwtOptions {
  /** exp = iat + ttlSeconds. */
  ttlSeconds: number;
}

export interface SigningKeysService {
  /** The customer's public keys (RFC 7517 JWK Set), each with kid, alg and use. */
  jwks(customerId: number): Promise<{ keys: JWK[] }>;
  /** The customer's private keys, for oidc-provider's `jwks` configuration only. Never serve these. */
  privateJwks(customerId: number): Promise<{ keys: JWK[] }>;
  /**
   * A compact RS256 JWT with the customer's key (`kid` header). `claims` carries iss, aud, sub and the
   * rest; iat and exp are set here, and jti when the claims have none.
   */
  signJwt(customerId: number, claims: JWTPayload, options: SignJwtOptions): Promise<string>;
  /** The customer's signing key as SAML uses it: PEM private key and the X.509 certificate over its public key. */
  samlSigning(customerId: number): Promise<SamlSigning>;
}

interface LoadedKey {
  publicJwk: JWK;
  privateJwk: JWK;
  privateKey: CryptoKey;
  createdAt: number;
  customerKey: string;
}

/** Keys never change once created, so a node keeps them; bounded for installations with many customers. */
const MAX_CACHED = 1000;

const sealAad = (customerId: number, kid: string) => `customer-signing-key:${customerId}:${kid}`;

export function createSigningKeysService(deps: { db: Kysely<Database>; sealer: Sealer; clock?: Clock }): SigningKeysService {
  const { db, sealer } = deps;
  const clock = deps.clock ?? systemClock;
  const cache = new Map<number, Promise<LoadedKey>>();
  // Keyed by the loaded key, so a key evicted from `cache` takes its certificate with it.
  const samlCache = new WeakMap<LoadedKey, Promise<SamlSigning>>();

  async function generate(customerId: number): Promise<repo.StoredSigningKey> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = await exportJWK(privateKey);
    return {
      customerId,
      kid,
      alg: SIGNING_ALG,
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' }),
      privateJwkSealed: sealer.seal(JSON.stringify({ ...privateJwk, kid, alg: SIGNING_ALG, use: 'sig' }), sealAad(customerId, kid)),
    };
  }

  async function load(customerId: number): Promise<LoadedKey> {
    let stored = await repo.findSigningKey(db, customerId);
    if (!stored) {
      await repo.insertSigningKeyIfAbsent(db, await generate(customerId), clock.now());
      // Whoever won the race, every node now reads the same key.
      stored = await repo.findSigningKey(db, customerId);
      if (!stored) throw new Error(`no signing key for customer ${customerId}`);
    }
    const privateJwk = JSON.parse(sealer.open(stored.privateJwkSealed, sealAad(customerId, stored.kid))) as JWK;
    const privateKey = await importJWK(privateJwk, stored.alg) as CryptoKey;
    return { publicJwk: JSON.parse(stored.publicJwk) as JWK, privateJwk, privateKey, createdAt: stored.createdAt, customerKey: stored.customerKey };
  }

  function key(customerId: number): Promise<LoadedKey> {
    let loaded = cache.get(customerId);
    if (!loaded) {
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
      loaded = load(customerId);
      // A failed load (database down) is not kept.
      loaded.catch(() => { if (cache.get(customerId) === loaded) cache.delete(customerId); });
      cache.set(customerId, loaded);
    }
    return loaded;
  }

  return {
    async jwks(customerId) {
      return { keys: [{ ...(await key(customerId)).publicJwk }] };
    },

    async privateJwks(customerId) {
      return { keys: [{ ...(await key(customerId)).privateJwk }] };
    },

    async signJwt(customerId, claims, { ttlSeconds }) {
      const { publicJwk, privateKey } = await key(customerId);
      const iat = Math.floor(clock.now() / 1000);
      return new SignJWT({ ...claims, jti: claims.jti ?? randomUUID() })
        .setProtectedHeader({ alg: SIGNING_ALG, kid: publicJwk.kid!, typ: 'JWT' })
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSeconds)
        .sign(privateKey);
    },

    async samlSigning(customerId) {
      const loaded = await key(customerId);
      let signing = samlCache.get(loaded);
      if (!signing) {
        signing = toSamlSigning(loaded);
        samlCache.set(loaded, signing);
      }
      return signing;
    },
  };
}

async function toSamlSigning(key: LoadedKey): Promise<SamlSigning> {
  const certificatePem = await selfSignedCertificate({
    privateJwk: key.privateJwk,
    publicJwk: key.publicJwk,
    // The customer key, not the issuer URL: the URL follows the installation's public address, and a
    // certificate that changed with it would break every service provider that pinned it.
    subjectCommonName: `Latchkey ${key.customerKey}`,
    notBefore: new Date(key.createdAt),
  });
  const privateKeyPem = createPrivateKey({ key: key.privateJwk as JsonWebKey, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' }) as string;
  return { privateKeyPem, certificatePem };
}
