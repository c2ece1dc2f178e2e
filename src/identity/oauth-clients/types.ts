/** OAuth 2.0 clients of a customer (client credentials grant for the magic-link routes). */

export interface OauthClient {
  id: number;
  customerId: number;
  /** Public identifier (UUID v4), sent as client_id. */
  clientId: string;
  name: string;
  createdAt: number;
}

export interface CreatedOauthClient {
  client: OauthClient;
  /** Shown once, now; only its SHA-256 is stored. */
  clientSecret: string;
}
