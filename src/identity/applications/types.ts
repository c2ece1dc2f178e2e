/** Applications users sign in to with a magic link, as the service and repo see them. */

export const APPLICATION_TYPES = ['JWT', 'OAUTH', 'SAML'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

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
  /** OAUTH only: with the master key, the client secret is derived from it. */
  clientSecretSalt: string | null;
  /** OAUTH only: SHA-256 hex of the client secret. */
  clientSecretHash: string | null;
  createdAt: number;
}

export interface ApplicationInput {
  name: string;
  type: ApplicationType;
  returnUrls?: string[];
  redirectUris?: string[];
  loginUrls?: string[];
}

export interface CreatedApplication {
  application: Application;
  /** OAUTH only, and only now: it is not shown again. */
  clientSecret?: string;
}
