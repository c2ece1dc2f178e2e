/** End users' SSO sessions: one per browser and customer, shared by the customer's applications. */

/** RFC 8176 authentication method references, one per factor shown. */
export const AUTH_METHODS = ['pwd', 'otp', 'hwk', 'email'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export interface SsoSession {
  id: number;
  customerId: number;
  userId: number;
  /** The user's credentials version at sign-in: a password change or reset ends the session. */
  credentialsVersion: number;
  /** The factors shown in this session, in the order they were. */
  amr: AuthMethod[];
  /** The browser's User-Agent (at most 200 characters) and its address, shown in the console. */
  userAgent: string;
  address: string;
  createdAt: number;
  lastSeenAt: number;
  /** The absolute end (at most LATCHKEY_SSO_MAX_HOURS after sign-in); idle ends it sooner. */
  expiresAt: number;
}

export interface SessionLimits {
  /** LATCHKEY_SSO_IDLE_MINUTES, default 30. */
  idleMs: number;
  /** LATCHKEY_SSO_MAX_HOURS, default 10. */
  maxMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { idleMs: 30 * 60_000, maxMs: 10 * 3600_000 };
