/**
 * End users: the rules of create, update, lookups by username or e-mail (an exact username match
 * wins), enable/disable, delete, passwords, and listing in batches with group names.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Invalid, UserNotFound } from '../../lib/errors.ts';
import { newGuid } from '../../lib/ids.ts';
import { checkPasswordRule, hashPassword, needsRehash, verifyAgainstDummy, verifyPassword } from '../../lib/passwords.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import type { GroupsService } from '../groups/service.ts';
import { rehashPassword } from './import-repo.ts';
import * as repo from './repo.ts';
import type { User, UserInput, UserWithGroups } from './types.ts';

export interface UsersPage { users: UserWithGroups[]; nextBatch: number }

export interface UsersService {
  /** @throws Invalid, Conflict (username or e-mail taken). */
  create(customerId: number, input: UserInput): Promise<User>;
  /** Fields left undefined keep their values; `groups` given replaces memberships. @throws NotFound, Invalid, Conflict */
  update(customerId: number, input: UserInput): Promise<User>;
  /** By username or primary e-mail, case-insensitive; an exact username match wins. */
  findByLogin(customerId: number, login: string): Promise<User | undefined>;
  findById(customerId: number, userId: number): Promise<User | undefined>;
  /** The user with their group names, in one read. */
  findByIdWithGroups(customerId: number, userId: number): Promise<UserWithGroups | undefined>;
  /** @throws NotFound */
  getWithGroups(customerId: number, login: string): Promise<UserWithGroups>;
  list(customerId: number, batchNo: number, batchSize: number): Promise<UsersPage>;
  /** @throws NotFound */
  remove(customerId: number, login: string): Promise<void>;
  /** @throws NotFound */
  setDisabled(customerId: number, login: string, isDisabled: boolean): Promise<User>;
  count(customerId: number): Promise<number>;
  /** @throws NotFound; Invalid('oldPassword') when it is wrong; Invalid('password') when equal or weak. */
  changePassword(customerId: number, login: string, oldPassword: string, newPassword: string): Promise<void>;
  /** The user when `password` is theirs and they are enabled; unknown users take as long as wrong passwords. */
  verifyCredentials(customerId: number, login: string, password: string): Promise<User | undefined>;
  setSecondFactorType(db: Executor, customerId: number, userId: number, type: string): Promise<void>;
  findUsersByEmails(db: Executor, customerId: number, emails: string[]): Promise<User[]>;
  /**
   * create inside the caller's transaction with the password already hashed (bulk import): the same
   * rules and writes; a unique-index failure is left to the caller. @throws Invalid
   */
  createIn(db: Executor, customerId: number, input: UserInput, passwordHash: string | null): Promise<User>;
  /** update likewise: `passwordHash` undefined keeps the password. @throws NotFound, Invalid */
  updateIn(db: Executor, customerId: number, input: UserInput, passwordHash: string | undefined): Promise<User>;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function pickLogin<U extends { username: string }>(candidates: U[], login: string): U | undefined {
  const norm = repo.normalise(login);
  return candidates.find((u) => repo.normalise(u.username) === norm) ?? candidates[0];
}

/** Tables a user's answers are read from: a user with their group names. */
const USER_TABLES = ['users', 'groups', 'group_members'] as const;
/** Kept answers, weighed in characters of their JSON: a few MiB per node whatever the traffic. */
const MAX_KEPT_USER_CHARS = 4_000_000;
const MAX_KEPT_PAGE_CHARS = 8_000_000;

/** About the characters of the user's record as JSON: what keeping it costs. */
function weighUser(user: UserWithGroups): number {
  let chars = 700 + user.username.length + user.email.length + user.firstName.length + user.lastName.length + user.phone.length;
  for (const value of Object.values(user.customAttributes)) chars += 2 * value.length + 60;
  for (const name of user.groups) chars += name.length + 3;
  return chars;
}

export function createUsersService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  groups: GroupsService;
  /** Undefined: nothing is kept in memory (LATCHKEY_READ_CACHE=false). */
  changes?: ChangeFeed;
}): UsersService {
  const { db, clock, groups } = deps;
  // users/get, users/getall and the site's "myself" are read far more often than users change, and each
  // costs two or three queries. Their answers are kept while the change feed says that none of the
  // tables they were read from changed (see store/read-cache.ts for how fresh that is).
  const usersWithGroupsByLogin = createReadCache<UserWithGroups>(deps.changes, {
    tables: USER_TABLES, maxEntries: 10_000, maxWeight: MAX_KEPT_USER_CHARS, weigh: weighUser,
  });
  const pages = createReadCache<UsersPage>(deps.changes, {
    tables: USER_TABLES, maxEntries: 100, maxWeight: MAX_KEPT_PAGE_CHARS,
    weigh: (page) => page.users.reduce((sum, user) => sum + weighUser(user), 0),
  });
  const usersWithGroups = createReadCache<UserWithGroups>(deps.changes, { tables: USER_TABLES, maxEntries: 10_000 });
  // Lookups by login from outside this service (MFA, the site, API tokens); writes here read in their transaction.
  // 2,000: the users active at one time; a lookup missed is one indexed read, and 10,000 kept users
  // held some 8 MiB of heap after a load that spread MFA registrations over 10,000 users.
  const usersByLogin = createReadCache<User>(deps.changes, { tables: ['users'], maxEntries: 2_000 });

  async function findByLogin(customerId: number, login: string, exec: Executor = db): Promise<User | undefined> {
    return pickLogin(await repo.findUsersByLogin(exec, customerId, login), login);
  }

  async function requireUser(customerId: number, login: string, exec: Executor = db): Promise<User> {
    const user = await findByLogin(customerId, login, exec);
    if (!user) throw new UserNotFound();
    return user;
  }

  async function withGroups(users: User[]): Promise<UserWithGroups[]> {
    if (users.length === 0) return [];
    const names = await groups.groupNamesByUser(db, users[0].customerId, users.map((u) => u.id));
    return users.map((u) => ({ ...u, groups: names.get(u.id) ?? [] }));
  }

  const emailTaken = () => new Conflict('user_exists', { field: 'email' }, 'a user with this email already exists');

  /** Turns a unique-index failure on create into the Conflict that names the taken field. */
  async function explainConflict(customerId: number, username: string): Promise<Conflict> {
    if (await repo.findUserByUsername(db, customerId, username)) return new Conflict('user_exists', { field: 'username' }, 'a user with this username already exists');
    return emailTaken();
  }

  /** create's rules: the e-mail to store. @throws Invalid */
  function checkNewUser(input: UserInput): string {
    const email = input.email ?? (EMAIL.test(input.username) ? input.username : undefined);
    if (email === undefined) throw new Invalid('email', 'is required');
    if (input.firstName === undefined) throw new Invalid('firstName', 'is required');
    if (input.lastName === undefined) throw new Invalid('lastName', 'is required');
    if (input.password !== undefined) checkPasswordRule(input.password);
    return email;
  }

  async function insertNew(trx: Executor, customerId: number, input: UserInput, email: string, passwordHash: string | null): Promise<User> {
    const assignments = input.groups ? await groups.resolveAssignments(trx, customerId, input.groups) : undefined;
    const user = await repo.insertUser(trx, customerId, {
      guid: newGuid(),
      username: input.username,
      email,
      firstName: input.firstName ?? '',
      lastName: input.lastName ?? '',
      phone: input.phone ?? '',
      alternateEmail: input.alternateEmail ?? '',
      passwordHash,
      customAttributes: input.customAttributes,
      now: clock.now(),
    });
    if (assignments && assignments.length > 0) await groups.setUserGroups(trx, customerId, user.id, assignments);
    else await groups.joinDefaultGroup(trx, customerId, user.id);
    return user;
  }

  async function updateExisting(trx: Executor, customerId: number, input: UserInput, passwordHash: string | undefined): Promise<User> {
    const found = await repo.findUserByUsername(trx, customerId, input.username)
      ?? pickLogin(await repo.findUsersByLogin(trx, customerId, input.username), input.username);
    // Concurrent updates of one user apply one after the other: none loses the other's attributes.
    const current = found && await repo.lockUser(trx, customerId, found.id);
    if (!current) throw new UserNotFound();
    const assignments = input.groups ? await groups.resolveAssignments(trx, customerId, input.groups) : undefined;
    const hasAttributes = Object.keys(input.customAttributes).length > 0;
    const updated = await repo.updateUser(trx, customerId, current.id, {
      email: input.email,
      firstName: input.firstName,
      lastName: input.lastName,
      phone: input.phone,
      alternateEmail: input.alternateEmail,
      passwordHash,
      customAttributes: hasAttributes ? { ...current.customAttributes, ...input.customAttributes } : undefined,
      bumpCredentials: passwordHash !== undefined,
      now: clock.now(),
    });
    if (assignments) await groups.setUserGroups(trx, customerId, current.id, assignments);
    return updated ?? current;
  }

  return {
    async create(customerId, input) {
      const email = checkNewUser(input);
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null;
      try {
        return await db.transaction().execute((trx) => insertNew(trx, customerId, input, email, passwordHash));
      } catch (error) {
        if (isUniqueViolation(error)) throw await explainConflict(customerId, input.username);
        throw error;
      }
    },

    async update(customerId, input) {
      if (input.password !== undefined) checkPasswordRule(input.password);
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : undefined;
      try {
        return await db.transaction().execute((trx) => updateExisting(trx, customerId, input, passwordHash));
      } catch (error) {
        // The username never changes on update: only the e-mail can collide.
        if (isUniqueViolation(error)) throw emailTaken();
        throw error;
      }
    },

    findByLogin: (customerId, login) => Promise.resolve(usersByLogin.read(`${customerId}:${login}`, () => findByLogin(customerId, login))),
    findById: (customerId, userId) => repo.findUserById(db, customerId, userId),
    findByIdWithGroups: (customerId, userId) => Promise.resolve(usersWithGroups.read(`${customerId}:${userId}`, async () => {
      const user = await repo.findUserById(db, customerId, userId);
      return user && (await withGroups([user]))[0];
    })),

    async getWithGroups(customerId, login) {
      const user = await usersWithGroupsByLogin.read(`${customerId}:${login}`, async () => {
        const found = await findByLogin(customerId, login);
        return found && (await withGroups([found]))[0];
      });
      if (!user) throw new UserNotFound();
      return user;
    },

    async list(customerId, batchNo, batchSize) {
      return (await pages.read(`${customerId}:${batchNo}:${batchSize}`, async () => {
        const rows = await repo.listUsersPage(db, customerId, (batchNo - 1) * batchSize, batchSize + 1);
        const hasMore = rows.length > batchSize;
        return { users: await withGroups(hasMore ? rows.slice(0, batchSize) : rows), nextBatch: hasMore ? batchNo + 1 : -1 };
      }))!;
    },

    async remove(customerId, login) {
      await db.transaction().execute(async (trx) => {
        const user = await requireUser(customerId, login, trx);
        // A concurrent delete may have won since the lookup: then this one deleted nothing.
        if (!(await repo.deleteUser(trx, customerId, user.id))) throw new UserNotFound();
      });
    },

    async setDisabled(customerId, login, isDisabled) {
      return db.transaction().execute(async (trx) => {
        const user = await requireUser(customerId, login, trx);
        // Disabling also retires issued JWTs for good: enabling again does not revive them.
        const updated = await repo.updateUser(trx, customerId, user.id, { isDisabled, bumpCredentials: isDisabled && !user.isDisabled, now: clock.now() });
        return updated ?? user;
      });
    },

    count: (customerId) => repo.countUsers(db, customerId),

    async changePassword(customerId, login, oldPassword, newPassword) {
      const user = await requireUser(customerId, login);
      const hash = await repo.findPasswordHash(db, customerId, user.id);
      if (hash === null || !(await verifyPassword(hash, oldPassword))) throw new Invalid('oldPassword', 'is incorrect');
      if (oldPassword === newPassword) throw new Invalid('password', 'must differ from the current password');
      checkPasswordRule(newPassword);
      const replaced = await repo.replacePasswordHash(db, customerId, user.id, hash, await hashPassword(newPassword), clock.now());
      // Another change won meanwhile: the old password given is no longer the current one.
      if (!replaced) throw new Invalid('oldPassword', 'is incorrect');
    },

    async verifyCredentials(customerId, login, password) {
      const user = await findByLogin(customerId, login);
      const hash = user ? await repo.findPasswordHash(db, customerId, user.id) : null;
      if (!user || hash === null) {
        await verifyAgainstDummy(password);
        return undefined;
      }
      // A disabled user's password still verifies (same time either way) but signs nobody in.
      const isValid = await verifyPassword(hash, password);
      if (isValid && needsRehash(hash)) {
        // An imported hash (bcrypt, argon2i, other parameters) becomes the service's argon2id on its
        // first good login. Not a password change: no new credentials version, expiry or update date.
        try {
          await rehashPassword(db, customerId, user.id, hash, await hashPassword(password));
        } catch {
          // Kept as it is; the next login tries again.
        }
      }
      return isValid && !user.isDisabled ? user : undefined;
    },

    async setSecondFactorType(exec, customerId, userId, type) {
      await repo.updateUser(exec, customerId, userId, { secondFactorType: type, now: clock.now() });
    },

    findUsersByEmails: (exec, customerId, emails) => repo.findUsersByEmails(exec, customerId, emails),
    createIn: (exec, customerId, input, passwordHash) => insertNew(exec, customerId, input, checkNewUser(input), passwordHash),
    updateIn: (exec, customerId, input, passwordHash) => updateExisting(exec, customerId, input, passwordHash),
  };
}
