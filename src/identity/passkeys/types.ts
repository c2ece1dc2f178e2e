/** Passkeys (WebAuthn credentials): a user's or the console owner's, used as a first or second factor. */

export interface PasskeySummary { passkeyId: string; name: string; createdAt: number; lastUsedAt: number | null }
/** Whose passkey: a user of the customer, or the customer's console owner (userId null). */
export interface PasskeyHolder { customerId: number; userId: number | null }

/** A challenge lives 5 minutes and is taken once. */
export const CEREMONY_TTL_MS = 5 * 60_000;
