/** Single logout (SAML core §3.7): a service provider's LogoutRequest read strictly, and the LogoutResponse answering it. */
import { DOMImplementation, XMLSerializer } from '@xmldom/xmldom';
import type { SamlSigning } from './certificate.ts';
import { readRequestHeader } from './request-header.ts';
import { childElements, onlyChild, parseSamlXml, SAML, SAMLP, SamlXmlError } from './xml.ts';
import { childAdder, instant, samlId, setAttributes } from './xml-building.ts';
import { signEnveloped } from './xml-signing.ts';

export interface LogoutRequest { id: string; issuer: string; issueInstant: number; nameId: string | undefined; sessionIndexes: string[]; destination: string | undefined }

/** @throws SamlXmlError (structure: ID, Version 2.0, IssueInstant, exactly one Issuer, at most one NameID) */
export function parseLogoutRequest(xml: string): LogoutRequest {
  const root = parseSamlXml(xml, { namespace: SAMLP, localNames: ['LogoutRequest'] }).documentElement!;
  const header = readRequestHeader(root);
  const sessionIndexes = childElements(root, SAMLP, 'SessionIndex').map((element) => element.textContent?.trim() ?? '');
  if (sessionIndexes.includes('')) throw new SamlXmlError('The LogoutRequest has an empty SessionIndex.');
  return { ...header, nameId: onlyChild(root, SAML, 'NameID')?.textContent?.trim() || undefined, sessionIndexes };
}

/** A LogoutResponse (status Success unless given); signed enveloped when `signed` (the POST binding), unsigned for the Redirect binding (the query is signed instead). */
export function buildLogoutResponse(input: { issuer: string; destination: string; inResponseTo: string; now: number; status?: 'Success' | 'Requester' | 'Responder'; signing?: SamlSigning }): string {
  const document = new DOMImplementation().createDocument(SAMLP, 'samlp:LogoutResponse', null);
  const response = document.documentElement!;
  const add = childAdder(document);
  setAttributes(response, { ID: samlId(), Version: '2.0', IssueInstant: instant(input.now), Destination: input.destination, InResponseTo: input.inResponseTo });
  add(response, SAML, 'saml:Issuer', {}, input.issuer);
  add(add(response, SAMLP, 'samlp:Status'), SAMLP, 'samlp:StatusCode', { Value: `urn:oasis:names:tc:SAML:2.0:status:${input.status ?? 'Success'}` });
  const xml = new XMLSerializer().serializeToString(document);
  return input.signing ? signEnveloped(xml, '/*', input.signing) : xml;
}
