/**
 * The SAML Response an identity provider posts to a service provider's ACS URL (SAML core §3.3.3, the
 * Web Browser SSO profile §4.1.4.2): built with the DOM, then the Assertion and the Response each signed
 * (xml-signing.ts), the Assertion first so that the Response's signature covers the Assertion's.
 */
import { DOMImplementation, XMLSerializer } from '@xmldom/xmldom';
import type { NameIdFormat } from '../applications/types.ts';
import type { SamlSigning } from './certificate.ts';
import { NAME_ID_FORMAT_URNS } from './urns.ts';
import { SAML, SAMLP } from './xml.ts';
import { childAdder, instant, samlId, setAttributes } from './xml-building.ts';
import { signEnveloped } from './xml-signing.ts';

export interface SamlAttributes { email: string; username: string; firstName: string; lastName: string; groups: string[] }

export interface ResponseInput {
  issuer: string;            // <issuer>
  destination: string;       // the ACS URL
  inResponseTo: string | undefined;
  audience: string;          // the SP's entityId
  nameId: { format: NameIdFormat; value: string };
  sessionIndex: string;
  authnInstant: number;      // epoch ms
  now: number;               // epoch ms (clock)
  attributes: SamlAttributes;
  signing: SamlSigning;
}

/** How long the SP may accept the Response: DESIGN.md allows at most 5 minutes. */
const VALIDITY_MS = 5 * 60_000;
/** NotBefore lies a minute back, so an SP whose clock runs a little behind ours still accepts the Assertion. */
const CLOCK_SKEW_MS = 60_000;
/** The sign-in may have been a password, a passkey or a mailed link, so the Assertion claims no particular class. */
const AUTHN_CONTEXT_UNSPECIFIED = 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const ATTRIBUTE_NAME_FORMAT_BASIC = 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic';

/** The Response XML: Assertion signed, then the Response signed (RSA-SHA256, exc-c14n, enveloped). */
export function buildSignedResponse(input: ResponseInput): string {
  const document = new DOMImplementation().createDocument(SAMLP, 'samlp:Response', null);
  const response = document.documentElement!;
  response.setAttributeNS('http://www.w3.org/2000/xmlns/', 'xmlns:saml', SAML);
  const add = childAdder(document);
  const expires = instant(input.now + VALIDITY_MS);

  setAttributes(response, { ID: samlId(), Version: '2.0', IssueInstant: instant(input.now), Destination: input.destination, InResponseTo: input.inResponseTo });
  add(response, SAML, 'saml:Issuer', {}, input.issuer);
  add(add(response, SAMLP, 'samlp:Status'), SAMLP, 'samlp:StatusCode', { Value: SUCCESS });

  const assertion = add(response, SAML, 'saml:Assertion', { ID: samlId(), Version: '2.0', IssueInstant: instant(input.now) });
  add(assertion, SAML, 'saml:Issuer', {}, input.issuer);
  const subject = add(assertion, SAML, 'saml:Subject');
  add(subject, SAML, 'saml:NameID', { Format: NAME_ID_FORMAT_URNS[input.nameId.format] }, input.nameId.value);
  const confirmation = add(subject, SAML, 'saml:SubjectConfirmation', { Method: BEARER });
  add(confirmation, SAML, 'saml:SubjectConfirmationData', { InResponseTo: input.inResponseTo, NotOnOrAfter: expires, Recipient: input.destination });
  const conditions = add(assertion, SAML, 'saml:Conditions', { NotBefore: instant(input.now - CLOCK_SKEW_MS), NotOnOrAfter: expires });
  add(add(conditions, SAML, 'saml:AudienceRestriction'), SAML, 'saml:Audience', {}, input.audience);
  const authn = add(assertion, SAML, 'saml:AuthnStatement', { AuthnInstant: instant(input.authnInstant), SessionIndex: input.sessionIndex });
  add(add(authn, SAML, 'saml:AuthnContext'), SAML, 'saml:AuthnContextClassRef', {}, AUTHN_CONTEXT_UNSPECIFIED);
  const statement = add(assertion, SAML, 'saml:AttributeStatement');
  const { email, username, firstName, lastName, groups } = input.attributes;
  for (const [name, values] of [['email', [email]], ['username', [username]], ['firstName', [firstName]], ['lastName', [lastName]], ['groups', groups]] as const) {
    const attribute = add(statement, SAML, 'saml:Attribute', { Name: name, NameFormat: ATTRIBUTE_NAME_FORMAT_BASIC });
    for (const value of values) add(attribute, SAML, 'saml:AttributeValue', {}, value);
  }

  const unsigned = new XMLSerializer().serializeToString(document);
  const assertionSigned = signEnveloped(unsigned, `/*/*[local-name(.)='Assertion' and namespace-uri(.)='${SAML}']`, input.signing);
  return signEnveloped(assertionSigned, '/*', input.signing);
}
