/**
 * The account page's step-up: before a change that takes a sign-in factor away, the user shows the
 * password or a passkey again. The proof is the time of that check sealed to this browser's SSO
 * session (a cookie, so no table): it opens only for the same customer and session row, and counts
 * for STEP_UP_MS. A new session (a sign-in, a password change) needs a new check.
 */
import type { Clock } from '../../lib/clock.ts';
import type { Sealer } from '../../lib/seal.ts';
import type { SsoSession } from '../sso-sessions/types.ts';

/** How long a check of the password or a passkey lets the user remove factors. */
export const STEP_UP_MS = 5 * 60_000;
export const STEP_UP_COOKIE = 'lk_step_up';

export interface StepUps {
  /** A fresh proof for the session (the cookie's value). */
  issue(session: SsoSession): string;
  /** True when `proof` was issued for this session less than STEP_UP_MS ago. */
  isFresh(session: SsoSession, proof: string | undefined): boolean;
}

export function createStepUps(deps: { sealer: Sealer; clock: Clock }): StepUps {
  const { sealer, clock } = deps;
  const aad = (session: SsoSession) => `account-step-up:${session.customerId}:${session.id}`;
  return {
    issue: (session) => sealer.seal(String(clock.now()), aad(session)),
    isFresh(session, proof) {
      if (!proof || proof.length > 200) return false;
      let checkedAt: number;
      try {
        checkedAt = Number(sealer.open(proof, aad(session)));
      } catch {
        return false;
      }
      const age = clock.now() - checkedAt;
      return Number.isFinite(age) && age >= 0 && age < STEP_UP_MS;
    },
  };
}
