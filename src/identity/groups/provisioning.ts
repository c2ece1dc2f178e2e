/**
 * Groups as a provisioning directory (SCIM, src/scim/) reads and writes them: by id, found by a search
 * condition, created with their members, renamed, and their members added, removed or replaced by
 * their users' guids. A member change touches only the members it names (a group of 100,000 is never
 * read whole to add one). Events as the groups service records them: group.updated for a new or
 * renamed group, group.members.updated, group.deleted.
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { groupTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Condition } from '../../lib/conditions.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { enforce } from '../../lib/text-rules.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import { pageTotal } from '../../store/page-total.ts';
import type { Database } from '../../store/schema.ts';
import { countGroupsWhere, findGroupIdsWhere, findGroupsByIds, type GroupField } from './query-repo.ts';
import * as repo from './repo.ts';
import { checkGroupExternalId, checkGroupName } from './rules.ts';
import type { GroupsService } from './service.ts';
import type { Group } from './types.ts';

export type { GroupField };

export interface MemberRef { guid: string; username: string }

/** One change of members, applied in order: SCIM's add, remove and replace of `members`. */
export type MemberChange =
  | { op: 'add' | 'remove' | 'replace'; guids: string[] }
  /** Every member leaves (SCIM's remove of `members` without a filter). */
  | { op: 'removeAll' };

export interface GroupChange {
  name?: string;
  /** "" clears it. */
  externalId?: string;
  members?: MemberChange[];
}

/** How many members a single request may name: a bound on one statement's parameters. */
export const MAX_MEMBERS_PER_WRITE = 1000;

export interface GroupProvisioningService {
  /** @throws NotFound */
  get(customerId: number, groupId: number): Promise<Group>;
  /** A page of the groups matching `condition` (all without one) by id, and how many match. */
  find(customerId: number, query: { condition?: Condition<GroupField>; offset: number; limit: number }): Promise<{ groups: Group[]; total: number }>;
  /** Each group's members by guid and username, in membership order. */
  members(customerId: number, groupIds: number[]): Promise<Map<number, MemberRef[]>>;
  /** @throws Invalid (name, externalId, a member that is no user of the customer); Conflict when the name is taken */
  create(customerId: number, input: { name: string; externalId?: string; memberGuids: string[] }, context: AuditContext): Promise<Group>;
  /** Everything in one transaction. @throws NotFound, Invalid, Immutable (the built-in group's name), Conflict */
  change(customerId: number, groupId: number, change: GroupChange, context: AuditContext): Promise<void>;
  /** @throws NotFound; Immutable for the built-in group. */
  remove(customerId: number, groupId: number, context: AuditContext): Promise<void>;
}

export function createGroupProvisioningService(deps: { db: Kysely<Database>; clock: Clock; audit: AuditRecorder; groups: GroupsService }): GroupProvisioningService {
  const { db, clock, audit, groups } = deps;

  async function get(customerId: number, groupId: number, exec: Executor = db): Promise<Group> {
    const group = await repo.findGroupById(exec, customerId, groupId);
    if (!group) throw new NotFound('group', 'The group does not exist.');
    return group;
  }

  function checkMembers(guids: string[]): void {
    if (guids.length > MAX_MEMBERS_PER_WRITE) throw new Invalid('members', `must NOT have more than ${MAX_MEMBERS_PER_WRITE} items`);
  }

  /** The user ids of `guids`; a guid of no user of this customer is refused when `strict` (an add), skipped otherwise (a remove). */
  async function resolve(exec: Executor, customerId: number, guids: string[], strict: boolean): Promise<number[]> {
    checkMembers(guids);
    const unique = [...new Set(guids)];
    const found = await repo.findUserIdsByGuids(exec, customerId, unique);
    if (strict && found.length < unique.length) {
      const known = new Set(found.map((u) => u.guid));
      const missing = unique.find((g) => !known.has(g))!;
      throw new Invalid('members', `names no user: ${missing.length > 64 ? `${missing.slice(0, 64)}…` : missing}`);
    }
    return found.map((u) => u.id);
  }

  /** Applies the member changes in order; how many memberships changed. */
  async function applyMembers(trx: Executor, customerId: number, groupId: number, changes: MemberChange[]): Promise<number> {
    let changed = 0;
    const now = clock.now();
    for (const change of changes) {
      if (change.op === 'removeAll') changed += await repo.replaceMembers(trx, customerId, groupId, [], now);
      else if (change.op === 'remove') changed += await repo.removeMembers(trx, customerId, groupId, await resolve(trx, customerId, change.guids, false));
      else {
        const ids = await resolve(trx, customerId, change.guids, true);
        changed += change.op === 'replace'
          ? await repo.replaceMembers(trx, customerId, groupId, ids, now)
          : await repo.addMembers(trx, customerId, groupId, ids.map((userId) => ({ userId, attributes: [] })), now);
      }
    }
    return changed;
  }

  return {
    get: (customerId, groupId) => get(customerId, groupId),

    async find(customerId, { condition, offset, limit }) {
      const ids = limit > 0 ? await findGroupIdsWhere(db, customerId, condition, offset, limit) : [];
      const total = await pageTotal(offset, limit, ids.length, () => countGroupsWhere(db, customerId, condition));
      return { groups: await findGroupsByIds(db, customerId, ids), total };
    },

    members: (customerId, groupIds) => repo.listMemberRefs(db, customerId, groupIds),

    async create(customerId, { name, externalId, memberGuids }, context) {
      enforce(checkGroupName('groupName', name));
      if (externalId !== undefined) enforce(checkGroupExternalId(externalId));
      checkMembers(memberGuids);
      const taken = () => new Conflict('group_exists', { field: 'groupName' }, `groupName ${name} is taken by another group`);
      try {
        return await db.transaction().execute(async (trx) => {
          await repo.lockCustomerGroups(trx, customerId);
          if ((await repo.findGroupIdsByNames(trx, customerId, [name])).length > 0) throw taken();
          const now = clock.now();
          const groupId = await repo.insertGroup(trx, customerId, { name, isDefault: false, isCustomerDefault: false, attributes: {}, now });
          if (externalId) await repo.setGroupExternalId(trx, customerId, groupId, externalId, now);
          // DESIGN's actions have no group.created: a new group is a group.updated (as groups/update records it).
          await audit.record(trx, customerId, { action: 'group.updated', target: groupTarget({ id: groupId, name }) }, context);
          if (memberGuids.length > 0 && await applyMembers(trx, customerId, groupId, [{ op: 'add', guids: memberGuids }]) > 0) {
            await audit.record(trx, customerId, { action: 'group.members.updated', target: groupTarget({ id: groupId, name }) }, context);
          }
          return get(customerId, groupId, trx);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw taken();
        throw error;
      }
    },

    async change(customerId, groupId, change, context) {
      if (change.externalId !== undefined) enforce(checkGroupExternalId(change.externalId));
      await db.transaction().execute(async (trx) => {
        const group = await get(customerId, groupId, trx);
        let renamed = false;
        if (change.name !== undefined && change.name !== group.name) renamed = await groups.renameIn(trx, customerId, groupId, change.name, context);
        const name = change.name ?? group.name;
        const externalId = change.externalId === undefined ? group.externalId : change.externalId || null;
        if (externalId !== group.externalId) {
          await repo.setGroupExternalId(trx, customerId, groupId, externalId, clock.now());
          // The rename wrote the group's event already.
          if (!renamed) await audit.record(trx, customerId, { action: 'group.updated', target: groupTarget({ id: groupId, name }) }, context);
        }
        if (change.members && change.members.length > 0 && await applyMembers(trx, customerId, groupId, change.members) > 0) {
          await audit.record(trx, customerId, { action: 'group.members.updated', target: groupTarget({ id: groupId, name }) }, context);
        }
      });
    },

    remove: (customerId, groupId, context) => groups.remove(customerId, groupId, context),
  };
}
