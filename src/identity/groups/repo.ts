import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import { forUpdate, type Executor } from '../../store/db.ts';
import type { GroupsTable } from '../../store/schema.ts';
import type { UserLine } from '../users/types.ts';
import type { Group, Membership } from './types.ts';

const normalise = (name: string): string => name.trim().toLowerCase();

function toGroup(row: Selectable<GroupsTable> & { member_count: number | string }): Group {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    isDefault: row.is_default === 1,
    isCustomerDefault: row.is_customer_default === 1,
    attributes: JSON.parse(row.attributes) as Record<string, string>,
    memberCount: Number(row.member_count),
    externalId: row.scim_external_id ?? null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Serialises group writes of one customer until the transaction ends: the built-in group's row is
 * locked (forUpdate: PostgreSQL; a SQLite transaction holds the write lock from its start). Attribute
 * merges and default moves read, then write: without this, two requests would lose one's attributes
 * or fail on the one-default index.
 */
export async function lockCustomerGroups(db: Executor, customerId: number): Promise<void> {
  await sql`select id from groups where customer_id = ${customerId} and is_customer_default = 1${forUpdate(db)}`.execute(db);
}

export async function insertGroup(db: Executor, customerId: number, values: {
  name: string; isDefault: boolean; isCustomerDefault: boolean; attributes: Record<string, string>; now: number;
}): Promise<number> {
  const row = await db.insertInto('groups').values({
    customer_id: customerId,
    name: values.name,
    name_norm: normalise(values.name),
    is_default: values.isDefault ? 1 : 0,
    is_customer_default: values.isCustomerDefault ? 1 : 0,
    attributes: JSON.stringify(values.attributes),
    created_at: values.now,
    updated_at: values.now,
  }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function updateGroup(db: Executor, customerId: number, groupId: number, values: {
  attributes: Record<string, string>; now: number;
}): Promise<void> {
  await db.updateTable('groups').set({ attributes: JSON.stringify(values.attributes), updated_at: values.now })
    .where('customer_id', '=', customerId).where('id', '=', groupId).execute();
}

/** Moves the default flag to `groupId` (clears it elsewhere first: one default per customer). */
export async function setDefaultGroup(db: Executor, customerId: number, groupId: number, now: number): Promise<void> {
  await db.updateTable('groups').set({ is_default: 0, updated_at: now })
    .where('customer_id', '=', customerId).where('is_default', '=', 1).where('id', '!=', groupId).execute();
  await db.updateTable('groups').set({ is_default: 1, updated_at: now })
    .where('customer_id', '=', customerId).where('id', '=', groupId).execute();
}

/** Clears the default flag of `groupId`; the customer's built-in group becomes default again. */
export async function unsetDefaultGroup(db: Executor, customerId: number, groupId: number, now: number): Promise<void> {
  const current = await db.selectFrom('groups').select(['id', 'is_default', 'is_customer_default'])
    .where('customer_id', '=', customerId).where('id', '=', groupId).executeTakeFirst();
  if (!current || current.is_default !== 1 || current.is_customer_default === 1) return;
  const builtIn = await db.selectFrom('groups').select('id')
    .where('customer_id', '=', customerId).where('is_customer_default', '=', 1).executeTakeFirst();
  if (builtIn) await setDefaultGroup(db, customerId, builtIn.id, now);
}

const withMemberCount = (db: Executor) => db.selectFrom('groups').selectAll('groups')
  .select((eb) => eb.selectFrom('group_members').whereRef('group_members.group_id', '=', 'groups.id')
    .select(eb.fn.countAll<number>().as('c')).as('member_count'));

export async function findGroupsByNames(db: Executor, customerId: number, names: string[]): Promise<Group[]> {
  if (names.length === 0) return [];
  const rows = await withMemberCount(db).where('customer_id', '=', customerId)
    .where('name_norm', 'in', names.map(normalise)).execute();
  return rows.map((r) => toGroup(r as typeof r & { member_count: number }));
}

/** Ids and names only: resolving names needs no member count, which walks every membership of the group. */
export async function findGroupIdsByNames(db: Executor, customerId: number, names: string[]): Promise<{ id: number; name: string }[]> {
  if (names.length === 0) return [];
  return db.selectFrom('groups').select(['id', 'name']).where('customer_id', '=', customerId)
    .where('name_norm', 'in', names.map(normalise)).execute();
}

export async function findDefaultGroup(db: Executor, customerId: number): Promise<{ id: number } | undefined> {
  return db.selectFrom('groups').select('id').where('customer_id', '=', customerId).where('is_default', '=', 1).executeTakeFirst();
}

export async function listGroupsPage(db: Executor, customerId: number, offset: number, limit: number): Promise<Group[]> {
  const rows = await withMemberCount(db).where('customer_id', '=', customerId)
    .orderBy('id').limit(limit).offset(offset).execute();
  return rows.map((r) => toGroup(r as typeof r & { member_count: number }));
}

export async function addMembers(db: Executor, customerId: number, groupId: number,
  members: { userId: number; attributes: { name: string; value: string }[] }[], now: number): Promise<number> {
  if (members.length === 0) return 0;
  const result = await db.insertInto('group_members').values(members.map((m) => ({
    customer_id: customerId,
    group_id: groupId,
    user_id: m.userId,
    attributes: JSON.stringify(m.attributes),
    created_at: now,
    updated_at: now,
  }))).onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing()).executeTakeFirst();
  // The members added (one already in is left as it is).
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

/** How many memberships it removed. */
export async function removeMembers(db: Executor, customerId: number, groupId: number, userIds: number[]): Promise<number> {
  if (userIds.length === 0) return 0;
  const result = await db.deleteFrom('group_members').where('customer_id', '=', customerId)
    .where('group_id', '=', groupId).where('user_id', 'in', userIds).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The user's memberships with their attributes as stored (JSON), by group id: what a replacement compares against. */
export async function findMembershipsOfUser(db: Executor, customerId: number, userId: number): Promise<{ groupId: number; attributes: string }[]> {
  return db.selectFrom('group_members').select(['group_id as groupId', 'attributes'])
    .where('customer_id', '=', customerId).where('user_id', '=', userId).orderBy('group_id').execute();
}

export async function removeAllMemberships(db: Executor, customerId: number, userId: number): Promise<void> {
  await db.deleteFrom('group_members').where('customer_id', '=', customerId).where('user_id', '=', userId).execute();
}

/**
 * Group names per user, in membership order. A page of users is a run of consecutive ids of one
 * customer, so one range read on (customer_id, user_id) serves it with the same SQL text whatever the
 * page size (an IN list would make a new statement per length); rows of other users are skipped.
 */
export async function groupNamesByUser(db: Executor, customerId: number, userIds: number[]): Promise<Map<number, string[]>> {
  const result = new Map<number, string[]>();
  if (userIds.length === 0) return result;
  const wanted = new Set(userIds);
  const rows = await db.selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .select(['group_members.user_id as userId', 'groups.name as name'])
    .where('group_members.customer_id', '=', customerId)
    .where('group_members.user_id', '>=', Math.min(...userIds))
    .where('group_members.user_id', '<=', Math.max(...userIds))
    .orderBy('group_members.user_id').orderBy('group_members.id')
    .execute();
  for (const { userId, name } of rows) {
    if (!wanted.has(userId)) continue;
    const names = result.get(userId);
    if (names) names.push(name); else result.set(userId, [name]);
  }
  return result;
}

export async function listMembershipsPage(db: Executor, customerId: number, offset: number, limit: number): Promise<Membership[]> {
  const rows = await db.selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .innerJoin('users', 'users.id', 'group_members.user_id')
    .select(['users.email as primaryEmail', 'groups.name as groupName', 'group_members.created_at as createdAt', 'group_members.updated_at as updatedAt'])
    .where('group_members.customer_id', '=', customerId)
    .orderBy('group_members.id').limit(limit).offset(offset).execute();
  return rows;
}

/** One group's members by e-mail, keyset on the membership id. */
export async function listGroupMembers(db: Executor, customerId: number, groupId: number, afterId: number, limit: number): Promise<{ members: UserLine[]; next?: number }> {
  const rows = await db.selectFrom('group_members')
    .innerJoin('users', 'users.id', 'group_members.user_id')
    .select(['group_members.id as mid', 'users.id', 'users.username', 'users.email', 'users.first_name', 'users.last_name', 'users.disabled'])
    .where('group_members.customer_id', '=', customerId)
    .where('group_members.group_id', '=', groupId)
    .where('group_members.id', '>', afterId)
    .orderBy('group_members.id')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  return {
    members: page.map((r) => ({ id: Number(r.id), username: r.username, email: r.email, name: [r.first_name, r.last_name].filter(Boolean).join(' '), isDisabled: r.disabled === 1 })),
    next: rows.length > limit ? Number(page[page.length - 1]!.mid) : undefined,
  };
}

/** `text` as a LIKE pattern matching any part of a normalised name (its own % _ \ taken literally). */
const containsPattern = (text: string): string => `%${normalise(text).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A page of the customer's groups by name (then id), those whose name holds `text` when it is not empty. */
export async function searchGroupsPage(db: Executor, customerId: number, text: string, offset: number, limit: number): Promise<Group[]> {
  let q = withMemberCount(db).where('customer_id', '=', customerId);
  if (text.trim()) q = q.where(sql<boolean>`name_norm like ${containsPattern(text)} escape '\\'`);
  const rows = await q.orderBy('name_norm').orderBy('id').limit(limit).offset(offset).execute();
  return rows.map((r) => toGroup(r as typeof r & { member_count: number }));
}

export async function countGroups(db: Executor, customerId: number, text: string): Promise<number> {
  let q = db.selectFrom('groups').select((eb) => eb.fn.countAll<number>().as('n')).where('customer_id', '=', customerId);
  if (text.trim()) q = q.where(sql<boolean>`name_norm like ${containsPattern(text)} escape '\\'`);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export async function setGroupExternalId(db: Executor, customerId: number, groupId: number, externalId: string | null, now: number): Promise<void> {
  await db.updateTable('groups').set({ scim_external_id: externalId, updated_at: now })
    .where('customer_id', '=', customerId).where('id', '=', groupId).execute();
}

export async function renameGroup(db: Executor, customerId: number, groupId: number, name: string, now: number): Promise<void> {
  await db.updateTable('groups').set({ name, name_norm: normalise(name), updated_at: now })
    .where('customer_id', '=', customerId).where('id', '=', groupId).execute();
}

/** Its memberships go with it (ON DELETE CASCADE). */
export async function deleteGroup(db: Executor, customerId: number, groupId: number): Promise<void> {
  await db.deleteFrom('groups').where('customer_id', '=', customerId).where('id', '=', groupId).execute();
}

/**
 * Login policies name their group by its normalised name: a renamed group keeps its policies, and a
 * deleted one takes them along (a later group of the same name starts without them).
 */
export async function renamePoliciesGroup(db: Executor, customerId: number, oldName: string, newName: string): Promise<void> {
  await db.updateTable('login_policies').set({ group_name: newName, group_name_norm: normalise(newName) })
    .where('customer_id', '=', customerId).where('group_name_norm', '=', normalise(oldName)).execute();
}

export async function deletePoliciesOfGroup(db: Executor, customerId: number, name: string): Promise<void> {
  await db.deleteFrom('login_policies').where('customer_id', '=', customerId).where('group_name_norm', '=', normalise(name)).execute();
}

export async function findGroupById(db: Executor, customerId: number, groupId: number): Promise<Group | undefined> {
  const row = await withMemberCount(db).where('customer_id', '=', customerId).where('id', '=', groupId).executeTakeFirst();
  return row && toGroup(row as typeof row & { member_count: number });
}

/** The ids of the customer's users among `guids` (SCIM names members by their user's guid); unknown ones are left out. */
export async function findUserIdsByGuids(db: Executor, customerId: number, guids: string[]): Promise<{ id: number; guid: string }[]> {
  if (guids.length === 0) return [];
  return db.selectFrom('users').select(['id', 'guid']).where('customer_id', '=', customerId).where('guid', 'in', guids).execute();
}

/** Each group's members as SCIM names them (guid, username), in membership order. */
export async function listMemberRefs(db: Executor, customerId: number, groupIds: number[]): Promise<Map<number, { guid: string; username: string }[]>> {
  const result = new Map<number, { guid: string; username: string }[]>(groupIds.map((id) => [id, []]));
  if (groupIds.length === 0) return result;
  const rows = await db.selectFrom('group_members')
    .innerJoin('users', 'users.id', 'group_members.user_id')
    .select(['group_members.group_id as groupId', 'users.guid', 'users.username'])
    .where('group_members.customer_id', '=', customerId)
    .where('group_members.group_id', 'in', groupIds)
    .orderBy('group_members.id')
    .execute();
  for (const { groupId, guid, username } of rows) result.get(groupId)?.push({ guid, username });
  return result;
}

/** Each user's groups (id and name), in membership order. */
export async function groupRefsByUser(db: Executor, customerId: number, userIds: number[]): Promise<Map<number, { id: number; name: string }[]>> {
  const result = new Map<number, { id: number; name: string }[]>(userIds.map((id) => [id, []]));
  if (userIds.length === 0) return result;
  const rows = await db.selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .select(['group_members.user_id as userId', 'groups.id as id', 'groups.name as name'])
    .where('group_members.customer_id', '=', customerId)
    .where('group_members.user_id', 'in', userIds)
    .orderBy('group_members.id')
    .execute();
  for (const { userId, id, name } of rows) result.get(userId)?.push({ id, name });
  return result;
}

/** Makes `userIds` the group's members: removes the others, adds the missing; how many memberships changed. */
export async function replaceMembers(db: Executor, customerId: number, groupId: number, userIds: number[], now: number): Promise<number> {
  let q = db.deleteFrom('group_members').where('customer_id', '=', customerId).where('group_id', '=', groupId);
  if (userIds.length > 0) q = q.where('user_id', 'not in', userIds);
  const removed = Number((await q.executeTakeFirst()).numDeletedRows);
  const added = await addMembers(db, customerId, groupId, userIds.map((userId) => ({ userId, attributes: [] })), now);
  return removed + added;
}
