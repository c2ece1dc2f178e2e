/**
 * A login policy as the factors (RFC 8176 `amr` values) a session must show, and whether a session's
 * factors satisfy it.
 */
import type { AuthMethod } from '../sso-sessions/types.ts';
import type { FirstFactor, SecondFactor } from '../policies/types.ts';

export interface FactorPolicy {
  firstFactor: FirstFactor;
  secondFactor: SecondFactor;
}

/** Each entry is one factor to show, as the methods that count for it (any one of them). */
export type Requirement = readonly AuthMethod[];

const FIRST: Record<FactorPolicy['firstFactor'], Requirement> = {
  PASSWORD: ['pwd'],
  MAGIC_LINK: ['email'],
  PASSKEY: ['hwk'],
};

// A recovery code stands in for the authenticator: it counts as `otp`.
const SECOND: Record<FactorPolicy['secondFactor'], Requirement | undefined> = {
  NONE: undefined,
  AUTHENTICATOR_APP: ['otp'],
  PASSKEY: ['hwk'],
  ANY: ['otp', 'hwk'],
};

export function requirements(policy: FactorPolicy): { first: Requirement; second: Requirement | undefined } {
  return { first: FIRST[policy.firstFactor], second: SECOND[policy.secondFactor] };
}

export function isShown(amr: readonly string[], requirement: Requirement): boolean {
  return requirement.some((method) => amr.includes(method));
}

/** True when the factors shown include every factor the policy asks for. */
export function satisfies(amr: readonly string[], policy: FactorPolicy): boolean {
  const { first, second } = requirements(policy);
  return isShown(amr, first) && (second === undefined || isShown(amr, second));
}
