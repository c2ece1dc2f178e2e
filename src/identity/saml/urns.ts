/** The SAML 2.0 URNs Latchkey names in more than one message: bindings (SAML bindings §3) and NameID formats (SAML core §8.3). */
import type { NameIdFormat } from '../applications/types.ts';

export const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
export const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

/** The URN of each NameID format an application may choose. */
export const NAME_ID_FORMAT_URNS: Record<NameIdFormat, string> = {
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
};
