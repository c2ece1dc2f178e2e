/** A site API key as listed (never its secret). */
export interface SiteApiKey {
  id: number;
  customerId: number;
  /** null: the site's default (read-only) key. */
  userId: number | null;
  /** The key's user's username; null for the default key. */
  username: string | null;
  name: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

/** The one time a key's secret is shown. */
export interface CreatedSiteApiKey {
  id: number;
  apiKey: string;
  key: SiteApiKey;
}

export interface NewSiteApiKey {
  /** Username or e-mail of the key's user; absent: the site's default key. */
  login?: string;
  name?: string;
  /** Epoch ms; absent: the key does not expire. */
  expiresAt?: number;
}
