export type ApiTokenType = 'basic' | 'bearer';

export const API_TOKEN_TYPES: readonly ApiTokenType[] = ['basic', 'bearer'];

export interface ApiToken {
  id: number;
  customerId: number;
  userId: number;
  /** The owner's username, for listings and the CLI. */
  username: string;
  name: string;
  type: ApiTokenType;
  createdAt: number;
  /** null = never expires. */
  expiresAt: number | null;
  lastUsedAt: number | null;
}

/** A token just created: the only time its secret exists outside the caller's hands. */
export interface CreatedApiToken extends ApiToken {
  secret: string;
}

export interface NewApiToken {
  userId: number;
  name: string;
  type: ApiTokenType;
  /** Lifetime in whole days from now; at most one of expiresInDays and expiresAt. */
  expiresInDays?: number;
  /** An absolute expiry instant (epoch ms). */
  expiresAt?: number;
}

/** The administrator's restrictions (config.site.apiTokens). */
export interface ApiTokenPolicy {
  /** Longest allowed lifetime of a new token; 0 means tokens may never expire. */
  maxExpiryDays: number;
  maxPerUser: number;
  /** The scheduler deletes tokens expired for more than this many days. */
  purgeAfterDays: number;
  purgeIntervalSeconds: number;
}

/** The owner facts the verifier needs, read with the token in one query. */
export interface TokenOwner {
  userId: number;
  username: string;
  email: string;
  /** As stored (END_USER unless set otherwise). */
  role: string;
  credentialsVersion: number;
  isDisabled: boolean;
  markForDeletion: boolean;
}

export interface TokenWithOwner {
  token: ApiToken;
  owner: TokenOwner;
}
