/**
 * Groups: listing, upsert by name, the default-group move, membership changes by e-mail, and the
 * membership functions the users module calls inside its own transactions.
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { groupTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Immutable, Invalid, NotFound } from '../../lib/errors.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import { enforce } from '../../lib/text-rules.ts';
import * as repo from './repo.ts';
import { checkGroupAttributes, checkGroupName, isGroupAttributeName } from './rules.ts';
import type { UserLine } from '../users/types.ts';
import { DEFAULT_GROUP_NAME, type Group, type GroupInput, type Membership } from './types.ts';

export interface Page<T> { items: T[]; nextBatch: number }

export interface ResolvedAssignment { groupId: number; attributes: { name: string; value: string }[] }

export interface MemberChange { primaryEmail: string; remove: boolean }

export interface GroupsService {
  createDefaultGroup(trx: Executor, customerId: number): Promise<void>;
  list(customerId: number, batchNo: number, batchSize: number): Promise<Page<Group>>;
  /** Creates missing groups, updates the others; all or nothing. */
  upsert(customerId: number, groups: GroupInput[], context: AuditContext): Promise<void>;
  /** @throws NotFound for an unknown group; Invalid for an unknown e-mail (nothing changes). */
  updateMembers(customerId: number, groupName: string, changes: MemberChange[], context: AuditContext): Promise<void>;
  listMemberships(customerId: number, batchNo: number, batchSize: number): Promise<Page<Membership>>;
  /** @throws Invalid naming the first group that does not exist. */
  resolveAssignments(db: Executor, customerId: number, assignments: { name: string; attributes: { name: string; value: string }[] }[]): Promise<ResolvedAssignment[]>;
  /** Replaces the user's memberships with `assignments`; false when they were those already (nothing written). */
  setUserGroups(db: Executor, customerId: number, userId: number, assignments: ResolvedAssignment[]): Promise<boolean>;
  joinDefaultGroup(db: Executor, customerId: number, userId: number): Promise<void>;
  groupNamesByUser(db: Executor, customerId: number, userIds: number[]): Promise<Map<number, string[]>>;
  /** Each user's groups by id and name (SCIM's read-only `groups` of a user). */
  groupsOfUsers(db: Executor, customerId: number, userIds: number[]): Promise<Map<number, { id: number; name: string }[]>>;
  /** One group's members, a keyset page: `after` is the previous page's `next` (0 for the first). */
  listMembers(customerId: number, groupId: number, page: { after: number; limit: number }): Promise<{ members: UserLine[]; next?: number }>;
  /** Creates the groups of `names` that do not exist (plain, no attributes) in the caller's transaction. */
  createMissing(db: Executor, customerId: number, names: string[], context: AuditContext): Promise<void>;
  /** One group by name (any case), with its member count; undefined when there is none. */
  findByName(customerId: number, name: string): Promise<Group | undefined>;
  /** A page of groups by name, those whose name holds `text` (any case, any part) when it is not empty, and how many match. */
  search(customerId: number, query: { text: string; offset: number; limit: number }): Promise<{ items: Group[]; total: number }>;
  /**
   * Renames a group; its login policies follow it.
   * @throws Invalid('groupName') breaking the name rule, or for the built-in group; Conflict when another group has the name.
   */
  rename(customerId: number, groupId: number, name: string, context: AuditContext): Promise<void>;
  /** rename inside the caller's transaction (SCIM's PATCH and PUT); false when the name was that already. @throws as rename */
  renameIn(db: Executor, customerId: number, groupId: number, name: string, context: AuditContext): Promise<boolean>;
  /** Makes the group the one new users join (the flag leaves the previous default). @throws NotFound */
  makeDefault(customerId: number, groupId: number, context: AuditContext): Promise<void>;
  /**
   * Deletes a group with its memberships and its login policies; when it was the default, the built-in
   * group becomes default again. @throws NotFound; Invalid for the built-in group, which stays.
   */
  remove(customerId: number, groupId: number, context: AuditContext): Promise<void>;
}

/**
 * The attributes to store: one set to "" is cleared (removed, not kept empty), and a name other than
 * groupAttributeN, which a row written before the rules may hold, goes on the next write.
 */
function withoutCleared(attributes: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== '' && isGroupAttributeName(name)) kept[name] = value;
  return kept;
}

/** Fetches one row more than asked, to know whether another batch exists. */
async function page<T>(batchNo: number, batchSize: number, fetch: (offset: number, limit: number) => Promise<T[]>): Promise<Page<T>> {
  const rows = await fetch((batchNo - 1) * batchSize, batchSize + 1);
  const hasMore = rows.length > batchSize;
  return { items: hasMore ? rows.slice(0, batchSize) : rows, nextBatch: hasMore ? batchNo + 1 : -1 };
}

const sameAttributes = (a: Record<string, string>, b: Record<string, string>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([name, value]) => b[name] === value);

export function createGroupsService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  findUsersByEmails: (db: Executor, customerId: number, emails: string[]) => Promise<{ id: number; email: string }[]>;
  audit: AuditRecorder;
}): GroupsService {
  const { db, clock, audit } = deps;

  async function upsertOnce(customerId: number, groups: GroupInput[], context: AuditContext): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await repo.lockCustomerGroups(trx, customerId);
      const now = clock.now();
      const existing = new Map((await repo.findGroupsByNames(trx, customerId, groups.map((g) => g.name)))
        .map((g) => [g.name.toLowerCase(), g]));
      for (const input of groups) {
        const found = existing.get(input.name.toLowerCase());
        let groupId: number;
        // A new group is a group.updated too: DESIGN's actions have no group.created (groups/update creates).
        let changed: boolean;
        if (found) {
          groupId = found.id;
          const attributes = withoutCleared({ ...found.attributes, ...input.attributes });
          changed = !sameAttributes(attributes, found.attributes) || input.isDefault !== found.isDefault;
          await repo.updateGroup(trx, customerId, groupId, { attributes, now });
        } else {
          enforce(checkGroupName(`groups[${groups.indexOf(input)}].groupName`, input.name));
          const attributes = withoutCleared(input.attributes);
          groupId = await repo.insertGroup(trx, customerId, { name: input.name, isDefault: false, isCustomerDefault: false, attributes, now });
          existing.set(input.name.toLowerCase(), { id: groupId, name: input.name, attributes, isDefault: input.isDefault } as Group);
          changed = true;
        }
        if (input.isDefault) await repo.setDefaultGroup(trx, customerId, groupId, now);
        else await repo.unsetDefaultGroup(trx, customerId, groupId, now);
        if (changed) await audit.record(trx, customerId, { action: 'group.updated', target: groupTarget({ id: groupId, name: found?.name ?? input.name }) }, context);
      }
    });
  }

  /** The group of `groupId`, read in the caller's transaction. @throws NotFound */
  async function requireGroup(exec: Executor, customerId: number, groupId: number): Promise<Group> {
    const group = await repo.findGroupById(exec, customerId, groupId);
    if (!group) throw new NotFound('group', 'The group does not exist.');
    return group;
  }

  async function renameIn(trx: Executor, customerId: number, groupId: number, name: string, context: AuditContext): Promise<boolean> {
    enforce(checkGroupName('groupName', name));
    await repo.lockCustomerGroups(trx, customerId);
    const group = await requireGroup(trx, customerId, groupId);
    if (group.isCustomerDefault) throw new Immutable('groupName', 'of the built-in group cannot change');
    const [other] = await repo.findGroupIdsByNames(trx, customerId, [name]);
    if (other && other.id !== groupId) throw new Conflict('group_exists', { field: 'groupName' }, `groupName ${name} is taken by another group`);
    if (group.name === name) return false;
    await repo.renameGroup(trx, customerId, groupId, name, clock.now());
    try {
      await repo.renamePoliciesGroup(trx, customerId, group.name, name);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      throw new Conflict('policy_exists', { field: 'groupName' }, `groupName ${name} already has login policies of its own (delete them first)`);
    }
    await audit.record(trx, customerId, { action: 'group.updated', target: groupTarget({ id: groupId, name }) }, context);
    return true;
  }

  return {
    async createDefaultGroup(trx, customerId) {
      await repo.insertGroup(trx, customerId, { name: DEFAULT_GROUP_NAME, isDefault: true, isCustomerDefault: true, attributes: {}, now: clock.now() });
    },

    list: (customerId, batchNo, batchSize) => page(batchNo, batchSize, (offset, limit) => repo.listGroupsPage(db, customerId, offset, limit)),

    async upsert(customerId, groups, context) {
      const seen = new Set<string>();
      groups.forEach((g, i) => {
        enforce(checkGroupAttributes(g, `groups[${i}].`));
        const key = g.name.trim().toLowerCase();
        if (seen.has(key)) throw new Invalid(`groups[${i}].groupName`, 'appears twice in the request');
        seen.add(key);
      });
      if (groups.filter((g) => g.isDefault).length > 1) throw new Invalid('groups', 'may mark at most one group as default');
      // lockCustomerGroups serialises upserts; should two inserts of one name still meet on the
      // unique index, the loser retries and finds the group.
      for (let attempt = 0; ; attempt++) {
        try { return await upsertOnce(customerId, groups, context); } catch (error) {
          if (!isUniqueViolation(error) || attempt >= 3) throw error;
        }
      }
    },

    async updateMembers(customerId, groupName, changes, context) {
      await db.transaction().execute(async (trx) => {
        const [group] = await repo.findGroupsByNames(trx, customerId, [groupName]);
        if (!group) throw new NotFound('group', `group ${groupName} does not exist`);
        const users = await deps.findUsersByEmails(trx, customerId, changes.map((c) => c.primaryEmail));
        const byEmail = new Map(users.map((u) => [u.email.toLowerCase(), u.id]));
        const toAdd: number[] = [];
        const toRemove: number[] = [];
        changes.forEach((change, i) => {
          const userId = byEmail.get(change.primaryEmail.trim().toLowerCase());
          if (userId === undefined) throw new Invalid(`users[${i}].primaryEmail`, 'does not belong to any user');
          (change.remove ? toRemove : toAdd).push(userId);
        });
        const now = clock.now();
        const removed = await repo.removeMembers(trx, customerId, group.id, toRemove);
        const added = await repo.addMembers(trx, customerId, group.id, toAdd.filter((id) => !toRemove.includes(id)).map((userId) => ({ userId, attributes: [] })), now);
        if (removed + added > 0) await audit.record(trx, customerId, { action: 'group.members.updated', target: groupTarget(group) }, context);
      });
    },

    listMemberships: (customerId, batchNo, batchSize) => page(batchNo, batchSize, (offset, limit) => repo.listMembershipsPage(db, customerId, offset, limit)),

    async resolveAssignments(exec, customerId, assignments) {
      const groups = await repo.findGroupIdsByNames(exec, customerId, assignments.map((a) => a.name));
      const byName = new Map(groups.map((g) => [g.name.toLowerCase(), g.id]));
      const resolved = new Map<number, ResolvedAssignment>();
      assignments.forEach((a, i) => {
        const groupId = byName.get(a.name.trim().toLowerCase());
        if (groupId === undefined) throw new Invalid(`groups[${i}].name`, `names a group that does not exist: ${a.name}`);
        resolved.set(groupId, { groupId, attributes: a.attributes });
      });
      return [...resolved.values()];
    },

    async setUserGroups(exec, customerId, userId, assignments) {
      const wanted = assignments.map((a) => ({ groupId: a.groupId, attributes: JSON.stringify(a.attributes) })).sort((a, b) => a.groupId - b.groupId);
      const stored = await repo.findMembershipsOfUser(exec, customerId, userId);
      if (stored.length === wanted.length && stored.every((m, i) => m.groupId === wanted[i]!.groupId && m.attributes === wanted[i]!.attributes)) return false;
      await repo.removeAllMemberships(exec, customerId, userId);
      for (const a of assignments) await repo.addMembers(exec, customerId, a.groupId, [{ userId, attributes: a.attributes }], clock.now());
      return true;
    },

    async joinDefaultGroup(exec, customerId, userId) {
      const group = await repo.findDefaultGroup(exec, customerId);
      if (group) await repo.addMembers(exec, customerId, group.id, [{ userId, attributes: [] }], clock.now());
    },

    groupNamesByUser: (exec, customerId, userIds) => repo.groupNamesByUser(exec, customerId, userIds),
    groupsOfUsers: (exec, customerId, userIds) => repo.groupRefsByUser(exec, customerId, userIds),

    listMembers: (customerId, groupId, { after, limit }) => repo.listGroupMembers(db, customerId, groupId, after, limit),

    async createMissing(exec, customerId, names, context) {
      if (names.length === 0) return;
      for (const [i, name] of names.entries()) enforce(checkGroupName(`groups[${i}]`, name));
      await repo.lockCustomerGroups(exec, customerId);
      const known = new Set((await repo.findGroupIdsByNames(exec, customerId, names)).map((g) => g.name.trim().toLowerCase()));
      const now = clock.now();
      for (const name of names) {
        const key = name.trim().toLowerCase();
        if (known.has(key)) continue;
        known.add(key);
        const groupId = await repo.insertGroup(exec, customerId, { name, isDefault: false, isCustomerDefault: false, attributes: {}, now });
        await audit.record(exec, customerId, { action: 'group.updated', target: groupTarget({ id: groupId, name }) }, context);
      }
    },

    findByName: async (customerId, name) => (await repo.findGroupsByNames(db, customerId, [name]))[0],

    async search(customerId, { text, offset, limit }) {
      const [items, total] = await Promise.all([repo.searchGroupsPage(db, customerId, text, offset, limit), repo.countGroups(db, customerId, text)]);
      return { items, total };
    },

    async rename(customerId, groupId, name, context) {
      await db.transaction().execute((trx) => renameIn(trx, customerId, groupId, name, context));
    },

    renameIn: (exec, customerId, groupId, name, context) => renameIn(exec, customerId, groupId, name, context),

    async makeDefault(customerId, groupId, context) {
      await db.transaction().execute(async (trx) => {
        await repo.lockCustomerGroups(trx, customerId);
        const group = await requireGroup(trx, customerId, groupId);
        if (group.isDefault) return;
        await repo.setDefaultGroup(trx, customerId, groupId, clock.now());
        await audit.record(trx, customerId, { action: 'group.updated', target: groupTarget(group) }, context);
      });
    },

    async remove(customerId, groupId, context) {
      await db.transaction().execute(async (trx) => {
        await repo.lockCustomerGroups(trx, customerId);
        const group = await requireGroup(trx, customerId, groupId);
        if (group.isCustomerDefault) throw new Immutable('group', 'is the built-in group, which cannot be deleted');
        const now = clock.now();
        if (group.isDefault) await repo.unsetDefaultGroup(trx, customerId, groupId, now);
        await repo.deletePoliciesOfGroup(trx, customerId, group.name);
        await repo.deleteGroup(trx, customerId, groupId);
        await audit.record(trx, customerId, { action: 'group.deleted', target: groupTarget(group) }, context);
      });
    },
  };
}
