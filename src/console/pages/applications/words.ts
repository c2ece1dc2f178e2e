/** The applications' and policies' enum values as the console shows them (the API's values stay the option values). */
import type { ApplicationType, NameIdFormat } from '../../../identity/applications/types.ts';
import type { FirstFactor, SecondFactor } from '../../../identity/policies/types.ts';

export const TYPE_WORDS: Record<ApplicationType, string> = { JWT: 'JWT', OAUTH: 'OAuth (OpenID Connect)', SAML: 'SAML' };
export const FIRST_FACTOR_WORDS: Record<FirstFactor, string> = { MAGIC_LINK: 'Magic link', PASSWORD: 'Password', PASSKEY: 'Passkey' };
export const SECOND_FACTOR_WORDS: Record<SecondFactor, string> = { NONE: 'None', AUTHENTICATOR_APP: 'Authenticator app', PASSKEY: 'Passkey', ANY: 'Authenticator app or passkey' };

/** The URL lists by the names the forms give them. */
export const LIST_WORDS = { returnUrls: 'Return URLs', redirectUris: 'Redirect URIs', loginUrls: 'Login URLs', postLogoutRedirectUris: 'Post-logout redirect URIs' } as const;
export type UrlListName = keyof typeof LIST_WORDS;

/** A SAML application's service-provider settings by the names the forms give them. */
export const SAML_WORDS = {
  entityId: 'Entity ID', acsUrls: 'ACS URLs', nameIdFormat: 'NameID format', sloUrl: 'Single logout URL', spCertificate: 'SP certificate', spMetadata: 'SP metadata',
} as const;
export type SamlFieldName = keyof typeof SAML_WORDS;

export const NAME_ID_FORMAT_WORDS: Record<NameIdFormat, string> = {
  emailAddress: 'E-mail address', persistent: 'Persistent (an opaque identifier per user and application)', unspecified: 'Unspecified (the username)',
};

/** A duplicate entity ID, as the forms say it. */
export const ENTITY_ID_TAKEN = 'Entity ID is already used by another application of yours.';
