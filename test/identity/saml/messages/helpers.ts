/** Keys and certificates for the message-layer tests: a service provider's, the identity provider's, a stranger's. */
import { createPrivateKey } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import { selfSignedCertificate, type SamlSigning } from '../../../../src/identity/saml/certificate.ts';

export async function newSigning(commonName = 'test'): Promise<SamlSigning> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const certificatePem = await selfSignedCertificate({ privateJwk, publicJwk: await exportJWK(publicKey), subjectCommonName: commonName, notBefore: new Date('2026-01-01T00:00:00Z') });
  const privateKeyPem = createPrivateKey({ key: privateJwk as never, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' }) as string;
  return { privateKeyPem, certificatePem };
}

/** The hidden input `name`'s value in node-saml's auto-submit form. */
export function formValue(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no ${name} in the form`);
  return match[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#13;/g, '\r');
}
