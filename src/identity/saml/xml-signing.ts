/**
 * The one way Latchkey signs SAML XML: xml-crypto, an enveloped signature right after the element's
 * Issuer (where the schema wants it, SAML core §5.4.1), RSA-SHA256 over exclusive canonicalisation, the
 * certificate in KeyInfo.
 */
import { SignedXml } from 'xml-crypto';
import type { SamlSigning } from './certificate.ts';
import { SAML } from './xml.ts';

export const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
export const EXCLUSIVE_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
export const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
export const SHA256_DIGEST = 'http://www.w3.org/2001/04/xmlenc#sha256';

/** @param xpath the element to sign; it has an ID attribute and a saml:Issuer child. */
export function signEnveloped(xml: string, xpath: string, signing: SamlSigning): string {
  const signer = new SignedXml({
    privateKey: signing.privateKeyPem,
    publicCert: signing.certificatePem,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: EXCLUSIVE_C14N,
  });
  signer.addReference({ xpath, transforms: [ENVELOPED, EXCLUSIVE_C14N], digestAlgorithm: SHA256_DIGEST });
  signer.computeSignature(xml, { prefix: 'ds', location: { reference: `${xpath}/*[local-name(.)='Issuer' and namespace-uri(.)='${SAML}']`, action: 'after' } });
  return signer.getSignedXml();
}
