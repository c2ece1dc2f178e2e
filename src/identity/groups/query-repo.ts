/**
 * Groups matching a search condition (SCIM's filter), a page by id and their number. The condition is
 * compiled to SQL by store/conditions.ts on indexed columns: name_norm (any case), the externalId
 * index, the id; a member is looked up through group_members by the user's guid.
 */
import { sql, type SqlBool } from 'kysely';
import type { Condition } from '../../lib/conditions.ts';
import { compileCondition, type ConditionColumns } from '../../store/conditions.ts';
import type { Executor } from '../../store/db.ts';
import type { Group } from './types.ts';
import { findGroupById } from './repo.ts';

export type GroupField = 'id' | 'name' | 'externalId' | 'memberGuid';

const COLUMNS: ConditionColumns<GroupField> = {
  // An integer column: a value that is no id matches nothing (PostgreSQL would refuse to compare it).
  id: (op, value) => {
    const id = /^[0-9]{1,15}$/.test(value) ? Number(value) : undefined;
    if (op === 'pr') return sql<SqlBool>`1 = 1`;
    if (op === 'eq') return id === undefined ? sql<SqlBool>`1 = 0` : sql<SqlBool>`groups.id = ${id}`;
    if (op === 'ne') return id === undefined ? sql<SqlBool>`1 = 1` : sql<SqlBool>`groups.id <> ${id}`;
    return sql<SqlBool>`1 = 0`;
  },
  name: { column: 'groups.name_norm', normalised: true },
  externalId: { column: 'groups.scim_external_id' },
  memberGuid: (op, value) => {
    const members = sql`select 1 from group_members join users on users.id = group_members.user_id where group_members.group_id = groups.id`;
    if (op === 'pr') return sql<SqlBool>`exists (${members})`;
    if (op === 'eq') return sql<SqlBool>`exists (${members} and users.guid = ${value})`;
    if (op === 'ne') return sql<SqlBool>`not exists (${members} and users.guid = ${value})`;
    // A guid is matched whole: the face offers eq, ne and pr only.
    return sql<SqlBool>`1 = 0`;
  },
};

/** Ids of the matching groups at [offset, offset + limit) in id order. */
export async function findGroupIdsWhere(db: Executor, customerId: number, condition: Condition<GroupField> | undefined, offset: number, limit: number): Promise<number[]> {
  let q = db.selectFrom('groups').select('groups.id').where('groups.customer_id', '=', customerId);
  if (condition) q = q.where((eb) => compileCondition(eb, condition, COLUMNS));
  return (await q.orderBy('groups.id').limit(limit).offset(offset).execute()).map((r) => Number(r.id));
}

export async function countGroupsWhere(db: Executor, customerId: number, condition: Condition<GroupField> | undefined): Promise<number> {
  let q = db.selectFrom('groups').select((eb) => eb.fn.countAll<number>().as('n')).where('groups.customer_id', '=', customerId);
  if (condition) q = q.where((eb) => compileCondition(eb, condition, COLUMNS));
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** The groups of `ids`, in that order (with their member counts). */
export async function findGroupsByIds(db: Executor, customerId: number, ids: number[]): Promise<Group[]> {
  const groups = await Promise.all(ids.map((id) => findGroupById(db, customerId, id)));
  return groups.filter((g): g is Group => g !== undefined);
}
