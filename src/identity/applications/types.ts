/** Applications users sign in to with a magic link, as the service and repo see them. */

export const APPLICATION_TYPES = ['JWT', 'OAUTH', 'SAML'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

export const NAME_ID_FORMATS = ['emailAddress', 'persistent', 'unspecified'] as const;
export type NameIdFormat = (typeof NAME_ID_FORMATS)[number];

/** A SAML application's service provider, as registered (DESIGN.md, SAML applications). */
export interface SamlServiceProvider {
  /** The SP's entity ID: the AuthnRequest's Issuer and the Assertion's audience; unique per customer. */
  entityId: string;
  /** 1..20 assertion consumer service URLs; the first is the default. */
  acsUrls: string[];
  nameIdFormat: NameIdFormat;
  /** Where a LogoutResponse goes; null when the SP has no single logout. */
  sloUrl: string | null;
  /** PEM; when set, the SP's AuthnRequests (and LogoutRequests) must be signed with it. */
  spCertificate: string | null;
}

export interface Application {
  id: number;
  customerId: number;
  /** The application's public identifier (UUID v4, lower case); the OAUTH application's client_id. */
  uuid: string;
  name: string;
  type: ApplicationType;
  /** JWT: where the landing may redirect with the id_token. */
  returnUrls: string[];
  /** OAUTH: the registered redirect URIs of the OpenID client. */
  redirectUris: string[];
  /** OAUTH: the application's own login URLs (the landing's default target). */
  loginUrls: string[];
  /** OAUTH: where RP-initiated logout may send the browser back (post_logout_redirect_uri, exactly one of these). */
  postLogoutRedirectUris: string[];
  /** OAUTH only: with the master key, the client secret is derived from it. */
  clientSecretSalt: string | null;
  /** OAUTH only: SHA-256 hex of the client secret. */
  clientSecretHash: string | null;
  /** SAML only (null for the other types). */
  saml: SamlServiceProvider | null;
  createdAt: number;
}

export interface ApplicationInput {
  name: string;
  type: ApplicationType;
  returnUrls?: string[];
  redirectUris?: string[];
  loginUrls?: string[];
  postLogoutRedirectUris?: string[];
  /** SAML: the SP's settings, each optional here (the rules say which are required), or its metadata XML instead. */
  entityId?: string;
  acsUrls?: string[];
  nameIdFormat?: string;
  sloUrl?: string;
  spCertificate?: string;
  /** SAML: the SP's metadata XML, from which entityId, acsUrls, nameIdFormat, sloUrl and spCertificate are read. */
  spMetadata?: string;
}

export interface CreatedApplication {
  application: Application;
  /** OAUTH only, and only now: it is not shown again. */
  clientSecret?: string;
}
