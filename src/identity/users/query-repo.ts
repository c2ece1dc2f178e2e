/**
 * Users matching a search condition (SCIM's filter), a page by id and their number. The condition is
 * compiled to SQL by store/conditions.ts on indexed columns: username_norm and email_norm (any case),
 * guid, the externalId index.
 */
import type { Condition } from '../../lib/conditions.ts';
import { compileCondition, type ConditionColumns } from '../../store/conditions.ts';
import type { Executor } from '../../store/db.ts';
import { toUser } from './repo.ts';
import type { User } from './types.ts';

export type UserField = 'guid' | 'username' | 'email' | 'externalId' | 'enabled';

const COLUMNS: ConditionColumns<UserField> = {
  guid: { column: 'users.guid' },
  username: { column: 'users.username_norm', normalised: true },
  email: { column: 'users.email_norm', normalised: true },
  externalId: { column: 'users.scim_external_id' },
  enabled: { column: 'users.disabled', flag: { inverted: true } },
};

/** The matching users at [offset, offset + limit) in id (creation) order. */
export async function findUsersWhere(db: Executor, customerId: number, condition: Condition<UserField> | undefined, offset: number, limit: number): Promise<User[]> {
  let q = db.selectFrom('users').selectAll().where('users.customer_id', '=', customerId);
  if (condition) q = q.where((eb) => compileCondition(eb, condition, COLUMNS));
  return (await q.orderBy('users.id').limit(limit).offset(offset).execute()).map(toUser);
}

export async function countUsersWhere(db: Executor, customerId: number, condition: Condition<UserField> | undefined): Promise<number> {
  let q = db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).where('users.customer_id', '=', customerId);
  if (condition) q = q.where((eb) => compileCondition(eb, condition, COLUMNS));
  return Number((await q.executeTakeFirstOrThrow()).n);
}
