/**
 * Whether a service provider's message is signed by the certificate registered for it. The XML
 * signature is checked by xml-crypto; what is checked here is its shape, so that a valid signature over
 * one element cannot vouch for another (signature wrapping): one signature, a direct child of the root,
 * one reference, to the root, by an ID no other element has. The key is always the registered
 * certificate, never the KeyInfo the message brings. RSA-SHA1 (and SHA-1 digests) are refused: SHA-1
 * collisions are practical, and every current service provider signs with SHA-256.
 */
import { verify } from 'node:crypto';
import type { Document } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import type { IncomingSamlMessage } from './bindings.ts';
import { DS, parseSamlXml, SAMLP, SamlXmlError } from './xml.ts';
import { ENVELOPED, EXCLUSIVE_C14N, RSA_SHA256 } from './xml-signing.ts';

const DIGESTS = ['http://www.w3.org/2001/04/xmlenc#sha256', 'http://www.w3.org/2001/04/xmlenc#sha512'];
const MESSAGES = ['AuthnRequest', 'LogoutRequest', 'LogoutResponse', 'Response'] as const;

/** True only when the message is signed by `certificatePem`: Redirect — the query signature (RSA-SHA256 only); POST — one enveloped XML signature, a direct child of the root, whose single reference is the root element's ID (signature wrapping refused). False when unsigned. */
export function verifyMessageSignature(message: IncomingSamlMessage, certificatePem: string): boolean {
  if (message.binding === 'redirect') return verifyQuerySignature(message, certificatePem);
  try {
    return verifyEnvelopedSignature(message.xml, certificatePem);
  } catch {
    // A malformed message or signature is not a valid one.
    return false;
  }
}

/** Whether the message carries any signature (query or XML). */
export function isSigned(message: IncomingSamlMessage): boolean {
  if (message.binding === 'redirect') return message.redirectSignature !== undefined;
  try {
    return parseSamlXml(message.xml, { namespace: SAMLP, localNames: MESSAGES }).getElementsByTagNameNS(DS, 'Signature').length > 0;
  } catch (error) {
    if (error instanceof SamlXmlError) return false;
    throw error;
  }
}

function verifyQuerySignature(message: IncomingSamlMessage, certificatePem: string): boolean {
  const signed = message.redirectSignature;
  if (!signed || signed.sigAlg !== RSA_SHA256) return false;
  try {
    return [signed.signedOctets, reencoded(signed.signedOctets)].some((octets) => verify('sha256', Buffer.from(octets, 'utf8'), certificatePem, signed.signature));
  } catch {
    return false;
  }
}

/**
 * The parameters percent-encoded afresh (space as %20). The bindings sign the query as sent, but some
 * service providers (node-saml among them) sign one encoding and send another (space as +). The
 * re-encoding is one-to-one on the decoded values, so a signature over it still vouches for exactly
 * what is read.
 */
function reencoded(signedOctets: string): string {
  return signedOctets.split('&').map((pair) => {
    const equals = pair.indexOf('=');
    return `${pair.slice(0, equals)}=${encodeURIComponent(decodeURIComponent(pair.slice(equals + 1).replace(/\+/g, ' ')))}`;
  }).join('&');
}

function verifyEnvelopedSignature(xml: string, certificatePem: string): boolean {
  const document = parseSamlXml(xml, { namespace: SAMLP, localNames: MESSAGES });
  const root = document.documentElement!;
  const signatures = Array.from(document.getElementsByTagNameNS(DS, 'Signature'));
  if (signatures.length !== 1 || signatures[0]!.parentNode !== root) return false;
  const id = root.getAttribute('ID');
  if (!id || elementsWithId(document, id) !== 1) return false;

  const signedXml = new SignedXml({ publicCert: certificatePem, getCertFromKeyInfo: () => null });
  signedXml.loadSignature(signatures[0] as unknown as Node);
  if (signedXml.signatureAlgorithm !== RSA_SHA256 || signedXml.canonicalizationAlgorithm !== EXCLUSIVE_C14N) return false;
  const references = signedXml.getReferences();
  if (references.length !== 1) return false;
  const [reference] = references;
  if (reference!.uri !== `#${id}` || !DIGESTS.includes(reference!.digestAlgorithm)) return false;
  const transforms = [...reference!.transforms];
  if (transforms[0] !== ENVELOPED || !transforms.slice(1).every((transform) => transform === EXCLUSIVE_C14N) || transforms.length > 2) return false;
  return signedXml.checkSignature(xml);
}

/** How many elements carry `id` in an ID, Id or id attribute (any prefix): xml-crypto resolves all of them. */
function elementsWithId(document: Document, id: string): number {
  return Array.from(document.getElementsByTagName('*')).filter((element) => Array.from(element.attributes)
    .some((attribute) => ['ID', 'Id', 'id'].includes(attribute.localName ?? attribute.name) && attribute.value === id)).length;
}
