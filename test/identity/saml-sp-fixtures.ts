/**
 * What a SAML service provider brings when it registers: a signing certificate (self-signed, RSA, as
 * SPs make them with openssl) and the metadata a real SP library writes (@node-saml/node-saml, which Latchkey does
 * not use itself), for the tests of SAML applications on every face.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateServiceProviderMetadata } from '@node-saml/node-saml';

export interface SpKeys { certificatePem: string; privateKeyPem: string }

/** A self-signed certificate and its key, made by openssl as an SP's administrator would. */
function selfSigned(keyAlgorithm: string[]): SpKeys {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-sp-'));
  try {
    execFileSync('openssl', ['req', '-x509', ...keyAlgorithm, '-nodes', '-sha256', '-days', '3650', '-subj', '/CN=sp.example.com',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    return { certificatePem: readFileSync(join(dir, 'cert.pem'), 'utf8'), privateKeyPem: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An SP's RSA signing certificate and key (2048 bits, SHA-256). */
export const rsaSpKeys = (): SpKeys => selfSigned(['-newkey', 'rsa:2048']);

/** An EC (P-256) certificate: well-formed, but not over an RSA key. */
export const ecSpKeys = (): SpKeys => selfSigned(['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']);

/** The metadata node-saml writes for an SP: entity ID, one HTTP-POST ACS, and as asked a signing certificate and an SLO URL. */
export function nodeSamlMetadata(options: { entityId: string; acsUrl: string; keys?: SpKeys; sloUrl?: string; identifierFormat?: string }): string {
  return generateServiceProviderMetadata({
    issuer: options.entityId,
    callbackUrl: options.acsUrl,
    ...(options.sloUrl ? { logoutCallbackUrl: options.sloUrl } : {}),
    ...(options.identifierFormat ? { identifierFormat: options.identifierFormat } : {}),
    ...(options.keys ? { privateKey: options.keys.privateKeyPem, publicCerts: options.keys.certificatePem } : {}),
  });
}

/** The base64 body of a PEM certificate (what metadata holds), without line breaks. */
export const pemBody = (pem: string): string => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
