/** Hosted sign-in flows as the service, repo and routes see them. */
import type { AuthMethod } from '../sso-sessions/types.ts';

/** A flow lives 15 minutes from its start (DESIGN.md, the sign-in page). */
export const FLOW_TTL_MS = 15 * 60_000;
/** Tries of a mailed code, in the browser that asked for it. */
export const CODE_MAX_ATTEMPTS = 5;

export const STEPS = ['identify', 'password', 'magic', 'passkey', 'second', 'enrol', 'codes', 'new-password'] as const;
export type Step = (typeof STEPS)[number];

export interface Flow {
  idHash: string;
  customerId: number;
  applicationId: number;
  applicationUuid: string;
  /** Where the browser goes once signed in (the protocol's own URL, which re-checks the session and issues). */
  returnTo: string;
  browserHash: string;
  /** Null until identified, and for a login naming nobody (or nobody with a policy). */
  userId: number | null;
  /** What the person typed at step 1. */
  login: string | null;
  step: Step;
  /** Factors shown: those of the browser's session when the flow started, then this flow's. */
  amr: AuthMethod[];
  linkId: number | null;
  codeHash: string | null;
  codeAttempts: number;
  createdAt: number;
  expiresAt: number;
}
