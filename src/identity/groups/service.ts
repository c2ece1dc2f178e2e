/**
 * Groups: listing, upsert by name, the default-group move, membership changes by e-mail, and the
 * membership functions the users module calls inside its own transactions.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';
import { DEFAULT_GROUP_NAME, type Group, type GroupInput, type Membership } from './types.ts';

export interface Page<T> { items: T[]; nextBatch: number }

export interface ResolvedAssignment { groupId: number; attributes: { name: string; value: string }[] }

export interface MemberChange { primaryEmail: string; remove: boolean }

export interface GroupsService {
  createDefaultGroup(trx: Executor, customerId: number): Promise<void>;
  list(customerId: number, batchNo: number, batchSize: number): Promise<Page<Group>>;
  /** Creates missing groups, updates the others; all or nothing. */
  upsert(customerId: number, groups: GroupInput[]): Promise<void>;
  /** @throws NotFound for an unknown group; Invalid for an unknown e-mail (nothing changes). */
  updateMembers(customerId: number, groupName: string, changes: MemberChange[]): Promise<void>;
  listMemberships(customerId: number, batchNo: number, batchSize: number): Promise<Page<Membership>>;
  /** @throws Invalid naming the first group that does not exist. */
  resolveAssignments(db: Executor, customerId: number, assignments: { name: string; attributes: { name: string; value: string }[] }[]): Promise<ResolvedAssignment[]>;
  /** Replaces the user's memberships with `assignments`. */
  setUserGroups(db: Executor, customerId: number, userId: number, assignments: ResolvedAssignment[]): Promise<void>;
  joinDefaultGroup(db: Executor, customerId: number, userId: number): Promise<void>;
  groupNamesByUser(db: Executor, customerId: number, userIds: number[]): Promise<Map<number, string[]>>;
  /** Creates the groups of `names` that do not exist (plain, no attributes) in the caller's transaction. */
  createMissing(db: Executor, customerId: number, names: string[]): Promise<void>;
}

/** Fetches one row more than asked, to know whether another batch exists. */
async function page<T>(batchNo: number, batchSize: number, fetch: (offset: number, limit: number) => Promise<T[]>): Promise<Page<T>> {
  const rows = await fetch((batchNo - 1) * batchSize, batchSize + 1);
  const hasMore = rows.length > batchSize;
  return { items: hasMore ? rows.slice(0, batchSize) : rows, nextBatch: hasMore ? batchNo + 1 : -1 };
}

export function createGroupsService(deps: { db: Kysely<Database>; clock: Clock; findUsersByEmails: (db: Executor, customerId: number, emails: string[]) => Promise<{ id: number; email: string }[]> }): GroupsService {
  const { db, clock } = deps;

  async function upsertOnce(customerId: number, groups: GroupInput[]): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await repo.lockCustomerGroups(trx, customerId);
      const now = clock.now();
      const existing = new Map((await repo.findGroupsByNames(trx, customerId, groups.map((g) => g.name)))
        .map((g) => [g.name.toLowerCase(), g]));
      for (const input of groups) {
        const found = existing.get(input.name.toLowerCase());
        let groupId: number;
        if (found) {
          groupId = found.id;
          await repo.updateGroup(trx, customerId, groupId, { attributes: { ...found.attributes, ...input.attributes }, now });
        } else {
          groupId = await repo.insertGroup(trx, customerId, { name: input.name, isDefault: false, isCustomerDefault: false, attributes: input.attributes, now });
          existing.set(input.name.toLowerCase(), { id: groupId, attributes: input.attributes } as Group);
        }
        if (input.isDefault) await repo.setDefaultGroup(trx, customerId, groupId, now);
        else await repo.unsetDefaultGroup(trx, customerId, groupId, now);
      }
    });
  }

  return {
    async createDefaultGroup(trx, customerId) {
      await repo.insertGroup(trx, customerId, { name: DEFAULT_GROUP_NAME, isDefault: true, isCustomerDefault: true, attributes: {}, now: clock.now() });
    },

    list: (customerId, batchNo, batchSize) => page(batchNo, batchSize, (offset, limit) => repo.listGroupsPage(db, customerId, offset, limit)),

    async upsert(customerId, groups) {
      const seen = new Set<string>();
      groups.forEach((g, i) => {
        const key = g.name.trim().toLowerCase();
        if (seen.has(key)) throw new Invalid(`groups[${i}].groupName`, 'appears twice in the request');
        seen.add(key);
      });
      if (groups.filter((g) => g.isDefault).length > 1) throw new Invalid('groups', 'may mark at most one group as default');
      // lockCustomerGroups serialises upserts; should two inserts of one name still meet on the
      // unique index, the loser retries and finds the group.
      for (let attempt = 0; ; attempt++) {
        try { return await upsertOnce(customerId, groups); } catch (error) {
          if (!isUniqueViolation(error) || attempt >= 3) throw error;
        }
      }
    },

    async updateMembers(customerId, groupName, changes) {
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
        await repo.removeMembers(trx, customerId, group.id, toRemove);
        await repo.addMembers(trx, customerId, group.id, toAdd.filter((id) => !toRemove.includes(id)).map((userId) => ({ userId, attributes: [] })), now);
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
      await repo.removeAllMemberships(exec, customerId, userId);
      for (const a of assignments) await repo.addMembers(exec, customerId, a.groupId, [{ userId, attributes: a.attributes }], clock.now());
    },

    async joinDefaultGroup(exec, customerId, userId) {
      const group = await repo.findDefaultGroup(exec, customerId);
      if (group) await repo.addMembers(exec, customerId, group.id, [{ userId, attributes: [] }], clock.now());
    },

    groupNamesByUser: (exec, customerId, userIds) => repo.groupNamesByUser(exec, customerId, userIds),

    async createMissing(exec, customerId, names) {
      if (names.length === 0) return;
      await repo.lockCustomerGroups(exec, customerId);
      const known = new Set((await repo.findGroupIdsByNames(exec, customerId, names)).map((g) => g.name.trim().toLowerCase()));
      const now = clock.now();
      for (const name of names) {
        const key = name.trim().toLowerCase();
        if (known.has(key)) continue;
        known.add(key);
        await repo.insertGroup(exec, customerId, { name, isDefault: false, isCustomerDefault: false, attributes: {}, now });
      }
    },
  };
}
