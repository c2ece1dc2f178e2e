/**
 * A service provider's SAML metadata (SAML 2.0 metadata, md:EntityDescriptor) read into the settings a
 * SAML application registers: entity ID, ACS URLs, NameID format, single logout URL and signing
 * certificate. Parsed through parseSamlXml (hardened, no DOCTYPE or entity); only the direct children
 * the metadata schema places are read, never a descendant found anywhere. The values are not checked
 * here: the applications service runs the same rules on them as on fields given one by one.
 */
import type { Element } from '@xmldom/xmldom';
import type { NameIdFormat } from '../applications/types.ts';
import { BINDING_POST, BINDING_REDIRECT, NAME_ID_FORMAT_URNS } from './urns.ts';
import { childElements, DS, MD, onlyChild, parseSamlXml, SAMLP, SamlXmlError } from './xml.ts';


export interface SpMetadata {
  entityId: string;
  /** The HTTP-POST assertion consumer services: the default (isDefault) first, then by index. */
  acsUrls: string[];
  /** The first NameIDFormat the metadata lists that Latchkey knows; absent when none. */
  nameIdFormat?: NameIdFormat;
  /** Where the SP takes a LogoutResponse (ResponseLocation, else Location) by HTTP-Redirect or HTTP-POST. */
  sloUrl?: string;
  /** The first signing certificate (KeyDescriptor use="signing" or without use), as PEM. */
  spCertificate?: string;
}

/** @throws SamlXmlError saying what is missing or not accepted (safe to show). */
export function parseSpMetadata(xml: string): SpMetadata {
  const root = parseSamlXml(xml, { namespace: MD, localNames: ['EntityDescriptor', 'EntitiesDescriptor'] }).documentElement!;
  const entity = root.localName === 'EntityDescriptor' ? root : onlyEntity(root);
  const entityId = entity.getAttribute('entityID')?.trim();
  if (!entityId) throw new SamlXmlError('The metadata\'s EntityDescriptor has no entityID.');
  const sp = onlyChild(entity, MD, 'SPSSODescriptor');
  if (!sp) throw new SamlXmlError('The metadata has no SPSSODescriptor (it describes no service provider).');
  const protocols = (sp.getAttribute('protocolSupportEnumeration') ?? '').split(/\s+/);
  if (!protocols.includes(SAMLP)) throw new SamlXmlError('The metadata\'s SPSSODescriptor does not support SAML 2.0.');

  const acsUrls = assertionConsumerServices(sp);
  if (acsUrls.length === 0) throw new SamlXmlError('The metadata has no AssertionConsumerService with the HTTP-POST binding.');
  const nameIdFormat = childElements(sp, MD, 'NameIDFormat')
    .map((e) => knownNameIdFormat(text(e)))
    .find((f) => f !== undefined);
  const slo = childElements(sp, MD, 'SingleLogoutService').find((e) => [BINDING_REDIRECT, BINDING_POST].includes(e.getAttribute('Binding') ?? ''));
  const sloUrl = slo && (slo.getAttribute('ResponseLocation') || slo.getAttribute('Location'))?.trim();
  const spCertificate = signingCertificate(sp);
  return {
    entityId,
    acsUrls,
    ...(nameIdFormat ? { nameIdFormat } : {}),
    ...(sloUrl ? { sloUrl } : {}),
    ...(spCertificate ? { spCertificate } : {}),
  };
}

function onlyEntity(entities: Element): Element {
  const found = childElements(entities, MD, 'EntityDescriptor');
  if (found.length !== 1) throw new SamlXmlError(`The metadata holds ${found.length} EntityDescriptors; give the one of this service provider.`);
  return found[0]!;
}

const text = (element: Element) => (element.textContent ?? '').trim();

function assertionConsumerServices(sp: Element): string[] {
  const services = childElements(sp, MD, 'AssertionConsumerService')
    .filter((e) => e.getAttribute('Binding') === BINDING_POST)
    .map((e, order) => ({
      location: (e.getAttribute('Location') ?? '').trim(),
      isDefault: e.getAttribute('isDefault') === 'true',
      index: /^\d{1,9}$/.test(e.getAttribute('index') ?? '') ? Number(e.getAttribute('index')) : Number.MAX_SAFE_INTEGER,
      order,
    }));
  services.sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.index - b.index || a.order - b.order);
  return services.map((s) => s.location);
}

function knownNameIdFormat(urn: string): NameIdFormat | undefined {
  return (Object.keys(NAME_ID_FORMAT_URNS) as NameIdFormat[]).find((name) => NAME_ID_FORMAT_URNS[name] === urn);
}

/** ds:KeyInfo/ds:X509Data/ds:X509Certificate of the first KeyDescriptor that signs (an encryption key is not one). */
function signingCertificate(sp: Element): string | undefined {
  for (const descriptor of childElements(sp, MD, 'KeyDescriptor')) {
    const use = descriptor.getAttribute('use');
    if (use && use !== 'signing') continue;
    const keyInfo = onlyChild(descriptor, DS, 'KeyInfo');
    const data = keyInfo && childElements(keyInfo, DS, 'X509Data')[0];
    const certificate = data && childElements(data, DS, 'X509Certificate')[0];
    if (!certificate) continue;
    return certificatePem(text(certificate));
  }
  return undefined;
}

/** A certificate's base64 (DER), spaces and line breaks anywhere, as PEM (64 characters a line). */
export function certificatePem(base64: string): string {
  const lines = base64.replace(/\s+/g, '').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
