/**
 * The X.509 certificate SAML service providers pin for a customer: self-signed over the customer's RS256
 * signing key. Everything in it derives from the key (serial from the JWK thumbprint, validity from the
 * key's creation time) and RSASSA-PKCS1-v1_5 signs deterministically, so every node produces the same
 * bytes without storing them.
 */
import { createHash, webcrypto } from 'node:crypto';
import type { JWK } from 'jose';

const ALGORITHM = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

/**
 * Twenty years: service providers pin this certificate (it is in the metadata they were given), and
 * the key does not rotate yet, so the certificate must not expire under them. Rotation, with a
 * second certificate announced in the metadata beforehand, is a later feature.
 */
const VALIDITY_YEARS = 20;

/** A self-signed X.509 certificate (PEM) over an RSA key; deterministic for a key: every node serves the same bytes. */
export async function selfSignedCertificate(key: { privateJwk: JWK; publicJwk: JWK; subjectCommonName: string; notBefore: Date }): Promise<string> {
  // Loaded with the first certificate, not with the services: @peculiar/x509, with the Reflect metadata
  // polyfill it needs loaded first (its README says so), cost every CLI command 90 ms of its 0.46 s of
  // CPU and a fresh server 4-5 MiB, and only SAML (a sign-in, the metadata) asks for a certificate,
  // once per customer and node.
  await import('reflect-metadata');
  const { X509CertificateGenerator } = await import('@peculiar/x509');
  const subtle = webcrypto.subtle;
  const keys = {
    privateKey: await subtle.importKey('jwk', rsaJwk(key.privateJwk), ALGORITHM, false, ['sign']),
    publicKey: await subtle.importKey('jwk', rsaJwk(key.publicJwk), ALGORITHM, true, ['verify']),
  };
  const notAfter = new Date(key.notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + VALIDITY_YEARS);
  const certificate = await X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(key.publicJwk),
    name: [{ CN: [key.subjectCommonName] }],
    notBefore: key.notBefore,
    notAfter,
    keys: keys as CryptoKeyPair,
    signingAlgorithm: ALGORITHM,
  }, webcrypto as unknown as Crypto);
  return certificate.toString('pem');
}

/** The RSA members only: WebCrypto refuses a JWK whose alg/use/kid disagree with the import. */
function rsaJwk(jwk: JWK): webcrypto.JsonWebKey {
  const { kty, n, e, d, p, q, dp, dq, qi } = jwk;
  return Object.fromEntries(Object.entries({ kty, n, e, d, p, q, dp, dq, qi }).filter(([, value]) => value !== undefined));
}

/**
 * 16 bytes of the public key's RFC 7638 thumbprint input hashed; the first byte kept in 0x40–0x7f so the
 * DER integer is positive and minimally encoded (RFC 5280 §4.1.2.2) without a padding byte.
 */
function serialNumber(publicJwk: JWK): string {
  const digest = createHash('sha256').update(JSON.stringify({ e: publicJwk.e, kty: publicJwk.kty, n: publicJwk.n })).digest().subarray(0, 16);
  digest[0] = (digest[0]! & 0x3f) | 0x40;
  return digest.toString('hex');
}

/** A customer's signing key as SAML uses it (xml-crypto and node:crypto take PEM). */
export interface SamlSigning {
  privateKeyPem: string;
  certificatePem: string;
}
