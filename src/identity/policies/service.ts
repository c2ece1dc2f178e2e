/**
 * Login policies: create (one per application and group, one application-wide), list, delete, and the
 * policy that applies to a user (findPolicyForUser) for the magic-link routes.
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { policyTarget } from '../../audit/targets.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import { enforce } from '../../lib/text-rules.ts';
import * as repo from './repo.ts';
import { normaliseGroupName } from './repo.ts';
import { checkPolicyGroupName } from './rules.ts';
import type { LoginPolicy, PolicyInput } from './types.ts';

export const POLICY_NOT_FOUND = 'The policy does not exist.';

export interface PoliciesService {
  /**
   * @throws NotFound for an unknown application UUID; Conflict when the application already has a
   *   policy for this group (or an application-wide one, without groupName); Invalid naming the field.
   */
  create(customerId: number, input: PolicyInput, context: AuditContext): Promise<LoginPolicy>;
  list(customerId: number): Promise<LoginPolicy[]>;
  /** @throws NotFound for an unknown policy id (another customer's included). */
  delete(customerId: number, policyId: number, context: AuditContext): Promise<LoginPolicy>;
  /**
   * The policy that applies to a user of `groupNames` (matched case-insensitively): one for one of
   * the user's groups, else the application-wide one; undefined when neither exists. When several of
   * the user's groups have a policy, the oldest (the one created first) wins. `groupNames` may be a
   * loader, called only when the application has a group's policy (most have only the application-wide one).
   */
  findPolicyForUser(db: Executor, customerId: number, applicationId: number, groupNames: readonly string[] | (() => Promise<readonly string[]>)): Promise<LoginPolicy | undefined>;
  /** True when some customer's policy asks for a passkey (first factor PASSKEY, second PASSKEY or ANY): the start checks the public URL then. */
  anyAsksForPasskeys(): Promise<boolean>;
}

/** @param changes undefined: nothing is kept in memory (LATCHKEY_READ_CACHE=false). */
export function createPoliciesService(deps: { db: Kysely<Database>; clock: Clock; applications: ApplicationsService; audit: AuditRecorder; changes?: ChangeFeed }): PoliciesService {
  const { db, clock, applications, audit } = deps;
  // Every magic-link generate and landing asks which policy applies: an application's policies (a
  // handful) are kept together, and the user's groups are matched against them in memory.
  const byApplication = createReadCache<LoginPolicy[]>(deps.changes, { tables: ['login_policies', 'applications'], maxEntries: 1_000, clock });

  return {
    async create(customerId, input, context) {
      enforce(checkPolicyGroupName(input.groupName));
      const groupName = input.groupName === undefined || input.groupName.trim() === '' ? null : input.groupName.trim();
      return db.transaction().execute(async (trx) => {
        const application = await applications.getByUuid(trx, customerId, input.applicationUuid);
        let id: number;
        try {
          id = await repo.insertPolicy(trx, customerId, {
            applicationId: application.id,
            firstFactor: input.firstFactor,
            secondFactor: input.secondFactor ?? 'NONE',
            groupName,
            now: clock.now(),
          });
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
          throw new Conflict('policy_exists', { field: 'groupName' }, groupName === null
            ? 'The application already has an application-wide policy (without groupName).'
            : `The application already has a policy for group ${groupName}.`);
        }
        const policy = (await repo.findPolicyById(trx, customerId, id))!;
        await audit.record(trx, customerId, { action: 'policy.created', target: policyTarget(policy) }, context);
        return policy;
      });
    },

    list: (customerId) => repo.listPolicies(db, customerId),

    async delete(customerId, policyId, context) {
      return db.transaction().execute(async (trx) => {
        const policy = await repo.findPolicyById(trx, customerId, policyId);
        if (!policy || !await repo.deletePolicy(trx, customerId, policyId)) throw new NotFound('policy', POLICY_NOT_FOUND);
        await audit.record(trx, customerId, { action: 'policy.deleted', target: policyTarget(policy) }, context);
        return policy;
      });
    },

    anyAsksForPasskeys: () => repo.anyAsksForPasskeys(db),

    async findPolicyForUser(exec, customerId, applicationId, groupNames) {
      // In a transaction, its own snapshot; else the kept list.
      const load = () => repo.findApplicationPolicies(exec, customerId, applicationId);
      const all = (exec === db ? await byApplication.read(`${customerId}:${applicationId}`, load) : await load()) ?? [];
      const applicationWide = all.find((p) => p.groupName === null);
      if (!all.some((p) => p.groupName !== null)) return applicationWide;
      const groups = new Set((typeof groupNames === 'function' ? await groupNames() : groupNames).map(normaliseGroupName));
      // Oldest first: the first group policy wins, and the application-wide one is the fallback.
      return all.find((p) => p.groupName !== null && groups.has(normaliseGroupName(p.groupName))) ?? applicationWide;
    },
  };
}
