/**
 * Users as a provisioning directory (SCIM, src/scim/) reads and writes them: by their public id
 * (guid), found by a search condition, created and changed with `enabled` and `externalId` in the same
 * transaction as the profile. Every write goes through the users service's rules and events: a user
 * provisioned here obeys exactly what the admin API's users obey.
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { Condition } from '../../lib/conditions.ts';
import { Conflict, Immutable, Invalid, UserNotFound } from '../../lib/errors.ts';
import { hashPassword } from '../../lib/passwords.ts';
import { isUniqueViolation } from '../../store/db.ts';
import { pageTotal } from '../../store/page-total.ts';
import type { Database } from '../../store/schema.ts';
import type { GroupsService } from '../groups/service.ts';
import { countUsersWhere, findUsersWhere, type UserField } from './query-repo.ts';
import { findUserByUsername, normalise } from './repo.ts';
import type { UsersService } from './service.ts';
import type { User, UserInput } from './types.ts';

export type { UserField };

/** A user with the groups they belong to, by id and name. */
export interface ProvisionedUser extends User {
  groupRefs: { id: number; name: string }[];
}

/** What a change writes: fields left undefined keep their values (username only names the user: it cannot change). */
export interface UserChange {
  input: Omit<UserInput, 'username' | 'groups'> & { username?: string };
  isEnabled?: boolean;
}

export interface UserProvisioningService {
  /** @throws NotFound */
  get(customerId: number, guid: string): Promise<ProvisionedUser>;
  /** A page of the users matching `condition` (all without one) in creation order, and how many match. */
  find(customerId: number, query: { condition?: Condition<UserField>; offset: number; limit: number }): Promise<{ users: ProvisionedUser[]; total: number }>;
  /** users/create's rules and event; disabled at once (user.disabled) when `isEnabled` is false. @throws Invalid, Conflict */
  create(customerId: number, input: UserInput, options: { isEnabled: boolean }, context: AuditContext): Promise<ProvisionedUser>;
  /**
   * The profile, password, externalId and enabled state in one transaction (the events of users/update
   * and users/disable or enable). @throws NotFound, Invalid, Immutable('userName') for another username, Conflict
   */
  change(customerId: number, guid: string, change: UserChange, context: AuditContext): Promise<ProvisionedUser>;
  /** users/delete by id. @throws NotFound */
  remove(customerId: number, guid: string, context: AuditContext): Promise<void>;
}

/** The first rule `input` breaks, before any password is hashed (hashing is the expensive part). */
function checkFirst(users: UsersService, input: UserInput, write: 'create' | 'update'): void {
  const [broken] = users.findProblems(input, write);
  if (broken) throw new Invalid(broken.field, broken.reason);
}

export function createUserProvisioningService(deps: { db: Kysely<Database>; users: UsersService; groups: GroupsService }): UserProvisioningService {
  const { db, users, groups } = deps;

  async function withGroups(list: User[]): Promise<ProvisionedUser[]> {
    if (list.length === 0) return [];
    const refs = await groups.groupsOfUsers(db, list[0].customerId, list.map((u) => u.id));
    return list.map((u) => ({ ...u, groupRefs: refs.get(u.id) ?? [] }));
  }

  async function get(customerId: number, guid: string): Promise<ProvisionedUser> {
    const user = await users.findByGuid(undefined, customerId, guid);
    if (!user) throw new UserNotFound();
    return (await withGroups([user]))[0];
  }

  async function explainConflict(customerId: number, username: string, isCreate: boolean): Promise<Conflict> {
    if (isCreate && await findUserByUsername(db, customerId, username)) return new Conflict('user_exists', { field: 'username' }, 'a user with this username already exists');
    return new Conflict('user_exists', { field: 'email' }, 'a user with this email already exists');
  }

  return {
    get,

    async find(customerId, { condition, offset, limit }) {
      const found = limit > 0 ? await findUsersWhere(db, customerId, condition, offset, limit) : [];
      const total = await pageTotal(offset, limit, found.length, () => countUsersWhere(db, customerId, condition));
      return { users: await withGroups(found), total };
    },

    async create(customerId, input, { isEnabled }, context) {
      checkFirst(users, input, 'create');
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null;
      try {
        const created = await db.transaction().execute(async (trx) => {
          const user = await users.createIn(trx, customerId, input, passwordHash, context);
          return isEnabled ? user : users.setDisabledIn(trx, customerId, user.id, true, context);
        });
        return (await withGroups([created]))[0];
      } catch (error) {
        if (isUniqueViolation(error)) throw await explainConflict(customerId, input.username, true);
        throw error;
      }
    },

    async change(customerId, guid, { input, isEnabled }, context) {
      const current = await users.findByGuid(undefined, customerId, guid);
      if (!current) throw new UserNotFound();
      if (input.username !== undefined && normalise(input.username) !== normalise(current.username)) {
        throw new Immutable('username', 'cannot change');
      }
      const full: UserInput = { ...input, username: current.username };
      checkFirst(users, full, 'update');
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : undefined;
      try {
        await db.transaction().execute(async (trx) => {
          await users.updateIn(trx, customerId, full, passwordHash, context);
          if (isEnabled !== undefined) await users.setDisabledIn(trx, customerId, current.id, !isEnabled, context);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw await explainConflict(customerId, current.username, false);
        throw error;
      }
      return get(customerId, guid);
    },

    async remove(customerId, guid, context) {
      const user = await users.findByGuid(undefined, customerId, guid);
      if (!user) throw new UserNotFound();
      // By username, which names exactly this user (an exact username match wins over an e-mail).
      await users.remove(customerId, user.username, context);
    },
  };
}
