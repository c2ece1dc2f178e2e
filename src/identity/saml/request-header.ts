/**
 * What every SAML request carries (SAML core §3.2.1, RequestAbstractType), read strictly: an ID that is
 * an NCName, Version 2.0, an IssueInstant in UTC, exactly one Issuer as a direct child, Destination.
 */
import type { Element } from '@xmldom/xmldom';
import { onlyChild, SAML, SamlXmlError } from './xml.ts';

export interface RequestHeader {
  id: string;
  issuer: string;
  issueInstant: number;
  destination: string | undefined;
}

/** xs:NCName, the ASCII subset: SAML IDs are generated tokens, and the ID goes back out as InResponseTo. */
const NC_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,255}$/;
/** xs:dateTime in UTC, as SAML core §1.3.3 requires. */
const UTC_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** @throws SamlXmlError */
export function readRequestHeader(root: Element): RequestHeader {
  const id = root.getAttribute('ID');
  if (!id || !NC_NAME.test(id)) throw new SamlXmlError(`The ${root.localName} has no valid ID.`);
  if (root.getAttribute('Version') !== '2.0') throw new SamlXmlError(`The ${root.localName} is not SAML version 2.0.`);
  const issueInstant = readInstant(root, 'IssueInstant');
  if (issueInstant === undefined) throw new SamlXmlError(`The ${root.localName} has no IssueInstant.`);
  const issuer = onlyChild(root, SAML, 'Issuer')?.textContent?.trim();
  if (!issuer) throw new SamlXmlError(`The ${root.localName} has no Issuer.`);
  return { id, issuer, issueInstant, destination: optionalAttribute(root, 'Destination') };
}

/** An xs:dateTime attribute in epoch ms, undefined when absent. @throws SamlXmlError when not a UTC date-time. */
export function readInstant(element: Element, name: string): number | undefined {
  const value = optionalAttribute(element, name);
  if (value === undefined) return undefined;
  const instant = Date.parse(value);
  if (!UTC_DATE_TIME.test(value) || Number.isNaN(instant)) throw new SamlXmlError(`${name} is not a UTC date and time.`);
  return instant;
}

export function optionalAttribute(element: Element, name: string): string | undefined {
  return element.hasAttribute(name) ? element.getAttribute(name)! : undefined;
}
