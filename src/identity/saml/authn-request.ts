/** A service provider's AuthnRequest (SAML core §3.4.1), its structure checked; whether it may be answered is the flow's call. */
import { readRequestHeader, optionalAttribute } from './request-header.ts';
import { parseSamlXml, SAMLP, SamlXmlError } from './xml.ts';

export interface AuthnRequest {
  id: string;
  issuer: string;
  issueInstant: number /* epoch ms */;
  destination: string | undefined;
  acsUrl: string | undefined;
  /** AssertionConsumerServiceIndex, when the request names the ACS URL by its index in the SP's list instead. */
  acsIndex?: number;
  protocolBinding: string | undefined;
  forceAuthn: boolean;
  isPassive: boolean;
}

/** @throws SamlXmlError (structure: ID, Version 2.0, IssueInstant, exactly one Issuer...) */
export function parseAuthnRequest(xml: string): AuthnRequest {
  const root = parseSamlXml(xml, { namespace: SAMLP, localNames: ['AuthnRequest'] }).documentElement!;
  const header = readRequestHeader(root);
  const acsIndexText = optionalAttribute(root, 'AssertionConsumerServiceIndex');
  if (acsIndexText !== undefined && !/^\d{1,5}$/.test(acsIndexText)) throw new SamlXmlError('AssertionConsumerServiceIndex is not a number.');
  const acsUrl = optionalAttribute(root, 'AssertionConsumerServiceURL');
  if (acsUrl !== undefined && acsIndexText !== undefined) throw new SamlXmlError('The AuthnRequest gives both an AssertionConsumerServiceURL and an index.');
  return {
    ...header,
    acsUrl,
    ...(acsIndexText === undefined ? {} : { acsIndex: Number(acsIndexText) }),
    protocolBinding: optionalAttribute(root, 'ProtocolBinding'),
    forceAuthn: readBoolean(root.getAttribute('ForceAuthn')),
    isPassive: readBoolean(root.getAttribute('IsPassive')),
  };
}

/** xs:boolean: "true" or "1"; absent is false. */
function readBoolean(value: string | null): boolean {
  if (value === null || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new SamlXmlError(`"${value}" is not a boolean.`);
}
