/** A customer's SCIM bearer token as listings show it: never the token or its hash. */
export interface ScimToken {
  id: number;
  customerId: number;
  /** Public id, `st_…`. */
  tokenId: string;
  name: string;
  createdAt: number;
  /** Epoch ms of the last request it authorised (kept to the minute); null when never used. */
  lastUsedAt: number | null;
}

/** The answer of create: the token in plain text, this once. */
export interface CreatedScimToken {
  scimToken: ScimToken;
  token: string;
}
