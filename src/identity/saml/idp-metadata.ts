/**
 * A customer's SAML IdP metadata (SAML metadata §2.4.3): its entity ID, the certificate its Responses
 * are signed with, and where service providers send sign-in and logout requests. Built with the DOM,
 * so every value is escaped by the serializer.
 */
import { DOMImplementation, XMLSerializer } from '@xmldom/xmldom';
import { DS, MD } from './xml.ts';
import { childAdder } from './xml-building.ts';
import { BINDING_POST, BINDING_REDIRECT, NAME_ID_FORMAT_URNS } from './urns.ts';


/** The base64 DER body of a PEM certificate, as ds:X509Certificate carries it. */
export function certificateBody(certificatePem: string): string {
  return certificatePem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
}

export function idpMetadataXml(input: { issuer: string; certificatePem: string }): string {
  const document = new DOMImplementation().createDocument(MD, 'md:EntityDescriptor', null);
  const root = document.documentElement!;
  root.setAttribute('entityID', input.issuer);
  const element = childAdder(document);

  const idp = element(root, MD, 'md:IDPSSODescriptor', {
    WantAuthnRequestsSigned: 'false',
    protocolSupportEnumeration: 'urn:oasis:names:tc:SAML:2.0:protocol',
  });
  const keyDescriptor = element(idp, MD, 'md:KeyDescriptor', { use: 'signing' });
  const keyInfo = element(keyDescriptor, DS, 'ds:KeyInfo');
  const x509Data = element(keyInfo, DS, 'ds:X509Data');
  element(x509Data, DS, 'ds:X509Certificate', {}, certificateBody(input.certificatePem));
  // Schema order: KeyDescriptor, SingleLogoutService, NameIDFormat, SingleSignOnService.
  for (const binding of [BINDING_REDIRECT, BINDING_POST]) {
    element(idp, MD, 'md:SingleLogoutService', { Binding: binding, Location: `${input.issuer}/saml/slo` });
  }
  for (const format of Object.values(NAME_ID_FORMAT_URNS)) element(idp, MD, 'md:NameIDFormat', {}, format);
  for (const binding of [BINDING_REDIRECT, BINDING_POST]) {
    element(idp, MD, 'md:SingleSignOnService', { Binding: binding, Location: `${input.issuer}/saml/sso` });
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(document)}`;
}
