/** Forgotten-password resets: a mailed link that sets a new password once. */

/** DESIGN.md: the reset link works 30 minutes. */
export const RESET_TTL_MS = 30 * 60_000;

export interface PasswordReset {
  id: number;
  customerId: number;
  userId: number;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

/** What a request for a reset did; the page says the same whatever it was. */
export type ResetRequestOutcome = 'mailed' | 'no-user' | 'capped';

/** What setting the password through a link did. */
export type ResetOutcome = { ok: true; userId: number } | { ok: false; reason: 'dead' };
