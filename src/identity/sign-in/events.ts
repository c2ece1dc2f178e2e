/**
 * The hosted sign-in's outcomes in the audit log: succeeded, failed (a wrong password or code, the
 * second factor's included: DESIGN has one action for both) and throttled. A user the login names
 * nobody is the target with an empty id and name: the text typed may be a password put in the wrong field.
 */
import type { Kysely } from 'kysely';
import { actingUser, type AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { AuditTarget } from '../../audit/types.ts';
import { RateLimited } from '../../lib/errors.ts';
import type { Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';

type Named = { id: number; username: string } | undefined;
export type SignInAction = 'signin.succeeded' | 'signin.failed' | 'signin.throttled';

export interface SignInEvents {
  /** In `executor` (the write that ends the flow), else on its own. A user named is the actor. */
  record(customerId: number, action: SignInAction, user: Named, context: AuditContext, executor?: Executor): Promise<void>;
  /** Runs the throttle's reservation; a refusal (RateLimited) is recorded as signin.throttled, then thrown on. */
  throttled<T>(customerId: number, user: Named, context: AuditContext, reserve: () => Promise<T>): Promise<T>;
}

const NOBODY: AuditTarget = { type: 'user', id: '', name: '' };

export function createSignInEvents(deps: { db: Kysely<Database>; audit: AuditRecorder }): SignInEvents {
  async function record(customerId: number, action: SignInAction, user: Named, context: AuditContext, executor: Executor = deps.db): Promise<void> {
    await deps.audit.record(executor, customerId, { action, target: user ? userTarget(user) : NOBODY }, user ? actingUser(context, user) : context);
  }
  return {
    record,
    async throttled(customerId, user, context, reserve) {
      try {
        return await reserve();
      } catch (error) {
        if (error instanceof RateLimited) await record(customerId, 'signin.throttled', user, context);
        throw error;
      }
    },
  };
}
