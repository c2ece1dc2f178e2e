/**
 * The sign-in factors a user manages on the account page: the authenticator app (set up, remove) and
 * passkeys (removal here; adding and renaming are the passkeys service's own). Taking a factor away
 * needs a fresh step-up (step-up.ts), and the page first says what the removal costs: which
 * applications' policies would then ask for a factor the user no longer has (consequencesOfRemoving).
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import { Conflict, Forbidden } from '../../lib/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { MfaService } from '../mfa/service.ts';
import type { Registration } from '../mfa/types.ts';
import type { PasskeysService } from '../passkeys/service.ts';
import type { PasskeySummary } from '../passkeys/types.ts';
import type { PoliciesService } from '../policies/service.ts';
import type { SignedIn } from '../sso-sessions/service.ts';
import type { UserWithGroups } from '../users/types.ts';
import type { StepUps } from './step-up.ts';

export type Factor = { kind: 'authenticator' } | { kind: 'passkey'; passkeyId: string };

export interface Factors {
  hasAuthenticator: boolean;
  passkeys: PasskeySummary[];
}

export interface AccountFactorsService {
  list(customerId: number, userId: number): Promise<Factors>;
  /**
   * One sentence per application whose policy the user meets now and would no longer meet without
   * `factor`, saying what happens at the next sign-in there; empty when nothing changes.
   */
  consequencesOfRemoving(customerId: number, user: UserWithGroups, factor: Factor): Promise<string[]>;
  /** @throws Conflict('authenticator_active') when one is active: it is removed first (with a step-up), never replaced unseen. */
  startAuthenticator(customerId: number, user: UserWithGroups, customerDisplayName: string): Promise<Registration>;
  /** @throws MfaFailed as mfa.validate */
  confirmAuthenticator(customerId: number, user: UserWithGroups, secret: string, code: string, context: AuditContext): Promise<void>;
  /** True when `stepUpProof` is a fresh step-up of this session: a removal may go ahead. */
  isSteppedUp(signedIn: SignedIn, stepUpProof: string | undefined): boolean;
  /** @throws Forbidden('step_up_required') without a fresh step-up of this session. */
  removeAuthenticator(customerId: number, signedIn: SignedIn, stepUpProof: string | undefined, context: AuditContext): Promise<void>;
  /** @throws Forbidden('step_up_required'); NotFound when the passkey is not this user's. */
  removePasskey(customerId: number, signedIn: SignedIn, stepUpProof: string | undefined, passkeyId: string, context: AuditContext): Promise<void>;
}

export interface AccountFactorsDeps {
  db: Kysely<Database>;
  mfa: Pick<MfaService, 'register' | 'validate' | 'reset' | 'hasActiveAuthenticator'>;
  passkeys: Pick<PasskeysService, 'list' | 'remove'>;
  applications: Pick<ApplicationsService, 'list'>;
  policies: Pick<PoliciesService, 'findPolicyForUser'>;
  stepUps: StepUps;
}

/** What the user holds, as the policies count it. */
interface Held { authenticator: boolean; passkeys: number }

type Need = 'authenticator' | 'passkey' | 'second factor';

/** The factor a policy asks for that `held` lacks, or undefined when it is met. */
function unmet(policy: { firstFactor: string; secondFactor: string }, held: Held): { need: Need; signInImpossible: boolean } | undefined {
  if (policy.firstFactor === 'PASSKEY' && held.passkeys === 0) return { need: 'passkey', signInImpossible: true };
  if (policy.secondFactor === 'AUTHENTICATOR_APP' && !held.authenticator) return { need: 'authenticator', signInImpossible: false };
  if (policy.secondFactor === 'PASSKEY' && held.passkeys === 0) return { need: 'passkey', signInImpossible: false };
  if (policy.secondFactor === 'ANY' && !held.authenticator && held.passkeys === 0) return { need: 'second factor', signInImpossible: false };
  return undefined;
}

const SET_UP: Record<Need, string> = {
  authenticator: 'set up an authenticator app',
  passkey: 'add a passkey',
  'second factor': 'set up an authenticator app or add a passkey',
};

/**
 * What happens at the next sign-in: the hosted sign-in page enrols the missing second factor on the
 * way in; a magic link cannot (its landing refuses until the factor exists again); an application
 * signing in with a passkey alone cannot be entered without one.
 */
function consequence(applicationName: string, firstFactor: string, missing: { need: Need; signInImpossible: boolean }): string {
  if (missing.signInImpossible) return `You will not be able to sign in to ${applicationName}: it signs in with a passkey, and you will have none.`;
  if (firstFactor === 'MAGIC_LINK') return `Your sign-in links to ${applicationName} will not work until you ${SET_UP[missing.need]} again.`;
  return `You will be asked to ${SET_UP[missing.need]} at your next sign-in to ${applicationName}.`;
}

export function createAccountFactorsService(deps: AccountFactorsDeps): AccountFactorsService {
  const { db, mfa, passkeys, applications, policies, stepUps } = deps;
  const holder = (customerId: number, userId: number) => ({ customerId, userId });

  function requireStepUp(signedIn: SignedIn, proof: string | undefined): void {
    if (!stepUps.isFresh(signedIn.session, proof)) throw new Forbidden('step_up_required', 'Confirm it is you first: enter your password or use a passkey.');
  }

  return {
    async list(customerId, userId) {
      const [hasAuthenticator, list] = await Promise.all([mfa.hasActiveAuthenticator(customerId, userId), passkeys.list(holder(customerId, userId))]);
      return { hasAuthenticator, passkeys: list };
    },

    async consequencesOfRemoving(customerId, user, factor) {
      const now = await this.list(customerId, user.id);
      const before: Held = { authenticator: now.hasAuthenticator, passkeys: now.passkeys.length };
      const removesPasskey = factor.kind === 'passkey' && now.passkeys.some((p) => p.passkeyId === factor.passkeyId);
      const after: Held = {
        authenticator: factor.kind === 'authenticator' ? false : before.authenticator,
        passkeys: before.passkeys - (removesPasskey ? 1 : 0),
      };
      const lines: string[] = [];
      for (const application of await applications.list(customerId)) {
        const policy = await policies.findPolicyForUser(db, customerId, application.id, user.groups);
        if (!policy || unmet(policy, before)) continue;
        const missing = unmet(policy, after);
        if (missing) lines.push(consequence(application.name, policy.firstFactor, missing));
      }
      return lines;
    },

    async startAuthenticator(customerId, user, customerDisplayName) {
      if (await mfa.hasActiveAuthenticator(customerId, user.id)) {
        throw new Conflict('authenticator_active', {}, 'An authenticator app is set up already: remove it first.');
      }
      return mfa.register(customerId, { login: user.username, customerDisplayName });
    },

    async confirmAuthenticator(customerId, user, secret, code, context) {
      await mfa.validate(customerId, { login: user.username, secret, otp: code }, context);
    },

    isSteppedUp: (signedIn, proof) => stepUps.isFresh(signedIn.session, proof),

    async removeAuthenticator(customerId, signedIn, proof, context) {
      requireStepUp(signedIn, proof);
      await mfa.reset(customerId, signedIn.user.username, context);
    },

    async removePasskey(customerId, signedIn, proof, passkeyId, context) {
      requireStepUp(signedIn, proof);
      await passkeys.remove(holder(customerId, signedIn.user.id), passkeyId, context);
    },
  };
}
