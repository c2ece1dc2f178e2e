/**
 * The one way SAML XML comes in: size-bounded, refused outright when it declares a DOCTYPE or an entity
 * (XXE, billion laughs: SAML never needs either), parsed strictly by @xmldom/xmldom (any warning or error
 * refuses), and its root checked to be the element the caller expects. Everything the SAML module reads
 * from a service provider goes through parseSamlXml; nothing else parses XML.
 */
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';

export const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
export const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
export const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
export const DS = 'http://www.w3.org/2000/09/xmldsig#';

/** Larger than any AuthnRequest, LogoutRequest or SP metadata document seen in practice. */
export const MAX_XML_BYTES = 256 * 1024;

/** What a service provider sent is not XML we accept; `message` is safe to show on the 400 page. */
export class SamlXmlError extends Error {}

/**
 * @param expected the root element's namespace and local names allowed (e.g. SAMLP + AuthnRequest).
 * @throws SamlXmlError for anything else.
 */
export function parseSamlXml(text: string, expected: { namespace: string; localNames: readonly string[] }): Document {
  if (Buffer.byteLength(text, 'utf8') > MAX_XML_BYTES) throw new SamlXmlError('The SAML message is too large.');
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new SamlXmlError('The SAML message declares a DOCTYPE or an entity, which is not accepted.');
  let document: Document;
  try {
    document = new DOMParser({
      onError: (level: string, message: string) => { throw new SamlXmlError(`The SAML message is not well-formed XML (${level}: ${message.split('\n')[0]}).`); },
    }).parseFromString(text, 'text/xml');
  } catch (error) {
    if (error instanceof SamlXmlError) throw error;
    throw new SamlXmlError('The SAML message is not well-formed XML.');
  }
  const root = document.documentElement;
  if (!root || root.namespaceURI !== expected.namespace || !expected.localNames.includes(root.localName ?? '')) {
    throw new SamlXmlError(`The SAML message is not a ${expected.localNames.join(' or ')}.`);
  }
  return document;
}

/** The direct children of `parent` with this namespace and local name (never descendants: no wrapping tricks). */
export function childElements(parent: Element, namespace: string, localName: string): Element[] {
  const found: Element[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    if (node.nodeType === node.ELEMENT_NODE && (node as Element).namespaceURI === namespace && (node as Element).localName === localName) found.push(node as Element);
  }
  return found;
}

/** The single direct child, or undefined; more than one is refused (a second Issuer or Signature is an attack). */
export function onlyChild(parent: Element, namespace: string, localName: string): Element | undefined {
  const found = childElements(parent, namespace, localName);
  if (found.length > 1) throw new SamlXmlError(`The SAML message has more than one ${localName}.`);
  return found[0];
}
