/**
 * End users: the rules of create, update, lookups by username or e-mail (an exact username match
 * wins), enable/disable, delete, passwords, and listing in batches with group names.
 */
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Invalid, UserNotFound } from '../../lib/errors.ts';
import { newGuid } from '../../lib/ids.ts';
import { enforce, type BrokenRule } from '../../lib/text-rules.ts';
import { checkPasswordRule, hashPassword, needsRehash, verifyAgainstDummy, verifyPassword } from '../../lib/passwords.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import type { GroupsService } from '../groups/service.ts';
import { rehashPassword } from './import-repo.ts';
import * as repo from './repo.ts';
import { checkUserInput, checkUserInputFields, isCustomAttributeName, looksLikeEmail } from './rules.ts';
import * as signIns from './sign-ins-repo.ts';
import { findUsersContaining, searchUsers, type UserSort } from './search-repo.ts';
import type { SearchMode, User, UserInput, UserLine, UserPage, UserWithGroups } from './types.ts';

/** The event of a password set for the user: an administrator's (default) or the user's own through a reset link. */
export type PasswordSetAction = 'user.password.changed' | 'password.reset';

export interface UsersPage { users: UserWithGroups[]; nextBatch: number }

export interface UsersService {
  /** @throws Invalid, Conflict (username or e-mail taken). */
  create(customerId: number, input: UserInput, context: AuditContext): Promise<User>;
  /** Fields left undefined keep their values; `groups` given replaces memberships. @throws NotFound, Invalid, Conflict */
  update(customerId: number, input: UserInput, context: AuditContext): Promise<User>;
  /** By username or primary e-mail, case-insensitive; an exact username match wins. */
  findByLogin(customerId: number, login: string): Promise<User | undefined>;
  findById(customerId: number, userId: number): Promise<User | undefined>;
  /** The user with their group names, in one read. */
  findByIdWithGroups(customerId: number, userId: number): Promise<UserWithGroups | undefined>;
  /** @throws NotFound */
  getWithGroups(customerId: number, login: string): Promise<UserWithGroups>;
  list(customerId: number, batchNo: number, batchSize: number): Promise<UsersPage>;
  /** @throws NotFound */
  remove(customerId: number, login: string, context: AuditContext): Promise<void>;
  /** @throws NotFound */
  setDisabled(customerId: number, login: string, isDisabled: boolean, context: AuditContext): Promise<User>;
  /**
   * setDisabled inside the caller's transaction, by id (SCIM's `active`): the same consequences (a
   * disable retires the user's credentials on every node) and the same event. @throws NotFound
   */
  setDisabledIn(db: Executor, customerId: number, userId: number, isDisabled: boolean, context: AuditContext): Promise<User>;
  /** By the public id (SCIM's `id`), read in `db` (the caller's transaction, or the pool). */
  findByGuid(db: Executor | undefined, customerId: number, guid: string): Promise<User | undefined>;
  count(customerId: number): Promise<number>;
  /** Users whose username or e-mail starts with `prefix` (mode 'all': every user, by id), a keyset page; `after` is the previous page's `next`. */
  search(customerId: number, query: { mode: SearchMode; prefix: string; after: string; limit: number }): Promise<UserPage>;
  /**
   * A numbered page of the users whose username, e-mail, first or last name contains `text` (any
   * case), with the number of matches (the console's list).
   */
  findPage(customerId: number, query: { text: string; sort: UserSort; offset: number; limit: number }): Promise<{ users: UserLine[]; total: number }>;
  /** Every rule the input breaks, one per field (create's required fields and password strength included). */
  findProblems(input: UserInput, write: 'create' | 'update'): BrokenRule[];
  /**
   * Sets the user's password for them (an administrator's reset): earlier site credentials stop working.
   * @throws NotFound; Invalid('password') when weak.
   */
  setPassword(customerId: number, userId: number, password: string, options: { requireChange: boolean; action?: PasswordSetAction }, context: AuditContext): Promise<void>;
  /** Notes that the user signed in now (at most one write a minute per user). */
  recordSignIn(customerId: number, userId: number): Promise<void>;
  /** When the user last signed in (the site's token endpoint, a magic link); null when never recorded. */
  findLastSignIn(customerId: number, userId: number): Promise<number | null>;
  /** @throws NotFound; Invalid('oldPassword') when it is wrong; Invalid('password') when equal or weak. */
  changePassword(customerId: number, login: string, oldPassword: string, newPassword: string, context: AuditContext): Promise<void>;
  /** The user when `password` is theirs and they are enabled; unknown users take as long as wrong passwords. */
  verifyCredentials(customerId: number, login: string, password: string): Promise<User | undefined>;
  setSecondFactorType(db: Executor, customerId: number, userId: number, type: string): Promise<void>;
  findUsersByEmails(db: Executor, customerId: number, emails: string[]): Promise<User[]>;
  /**
   * create inside the caller's transaction with the password already hashed (bulk import): the same
   * rules and writes; a unique-index failure is left to the caller. @throws Invalid
   */
  createIn(db: Executor, customerId: number, input: UserInput, passwordHash: string | null, context: AuditContext): Promise<User>;
  /** update likewise: `passwordHash` undefined keeps the password. @throws NotFound, Invalid */
  updateIn(db: Executor, customerId: number, input: UserInput, passwordHash: string | undefined, context: AuditContext): Promise<User>;
}

/**
 * The attributes to store: one set to "" is cleared (removed, not kept empty), and a name other than
 * customAttributeN, which a row written before the rules may hold, goes on the next write.
 */
function withoutCleared(attributes: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== '' && isCustomAttributeName(name)) kept[name] = value;
  return kept;
}

const sameAttributes = (a: Record<string, string>, b: Record<string, string>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([name, value]) => b[name] === value);

/** Whether an update wrote anything a reader could see (updated_at aside): else it records no event. */
function profileChanged(before: User, after: User): boolean {
  return before.email !== after.email || before.firstName !== after.firstName || before.lastName !== after.lastName
    || before.phone !== after.phone || before.alternateEmail !== after.alternateEmail
    || before.externalId !== after.externalId || !sameAttributes(before.customAttributes, after.customAttributes);
}

function pickLogin<U extends { username: string }>(candidates: U[], login: string): U | undefined {
  const norm = repo.normalise(login);
  return candidates.find((u) => repo.normalise(u.username) === norm) ?? candidates[0];
}

/** A user signing in all day writes their last sign-in once a minute, not on every token. */
const SIGN_IN_WRITE_INTERVAL_MS = 60_000;

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
  /** Every change writes its audit event in its own transaction. */
  audit: AuditRecorder;
  /** Undefined: nothing is kept in memory (LATCHKEY_READ_CACHE=false). */
  changes?: ChangeFeed;
}): UsersService {
  const { db, clock, groups } = deps;
  // users/get, users/getall and the site's "myself" are read far more often than users change, and each
  // costs two or three queries. Their answers are kept while the change feed says that none of the
  // tables they were read from changed (see store/read-cache.ts for how fresh that is).
  const usersWithGroupsByLogin = createReadCache<UserWithGroups>(deps.changes, {
    tables: USER_TABLES, maxEntries: 10_000, maxWeight: MAX_KEPT_USER_CHARS, weigh: weighUser, clock,
  });
  const pages = createReadCache<UsersPage>(deps.changes, {
    tables: USER_TABLES, maxEntries: 100, maxWeight: MAX_KEPT_PAGE_CHARS, clock,
    weigh: (page) => page.users.reduce((sum, user) => sum + weighUser(user), 0),
  });
  const usersWithGroups = createReadCache<UserWithGroups>(deps.changes, { tables: USER_TABLES, maxEntries: 10_000, clock });
  // Lookups by login from outside this service (MFA, the site, API tokens); writes here read in their transaction.
  // 2,000: the users active at one time; a lookup missed is one indexed read, and 10,000 kept users
  // held some 8 MiB of heap after a load that spread MFA registrations over 10,000 users.
  const usersByLogin = createReadCache<User>(deps.changes, { tables: ['users'], maxEntries: 2_000, clock });

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

  /** create's rules (users/rules.ts, then what create demands): the e-mail to store. @throws Invalid */
  function checkNewUser(input: UserInput): string {
    enforce(checkUserInput(input, 'create'));
    const email = input.email ?? (looksLikeEmail(input.username) ? input.username : undefined);
    if (email === undefined) throw new Invalid('email', 'is required');
    if (input.firstName === undefined) throw new Invalid('firstName', 'is required');
    if (input.lastName === undefined) throw new Invalid('lastName', 'is required');
    if (input.password !== undefined) checkPasswordRule(input.password);
    return email;
  }

  /** update's rules, whoever calls (the console, import and SCIM as much as the admin API). @throws Invalid */
  function checkChanges(input: UserInput): void {
    enforce(checkUserInput(input, 'update'));
    if (input.password !== undefined) checkPasswordRule(input.password);
  }

  async function insertNew(trx: Executor, customerId: number, input: UserInput, email: string, passwordHash: string | null, context: AuditContext): Promise<User> {
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
      customAttributes: withoutCleared(input.customAttributes),
      externalId: input.externalId || null,
      now: clock.now(),
    });
    if (assignments && assignments.length > 0) await groups.setUserGroups(trx, customerId, user.id, assignments);
    else await groups.joinDefaultGroup(trx, customerId, user.id);
    await deps.audit.record(trx, customerId, { action: 'user.created', target: userTarget(user) }, context);
    return user;
  }

  async function updateExisting(trx: Executor, customerId: number, input: UserInput, passwordHash: string | undefined, context: AuditContext): Promise<User> {
    // Concurrent updates of one user apply one after the other: none loses the other's attributes.
    let current = await repo.lockUserByUsername(trx, customerId, input.username);
    if (!current) {
      const found = pickLogin(await repo.findUsersByLogin(trx, customerId, input.username), input.username);
      current = found && await repo.lockUser(trx, customerId, found.id);
    }
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
      customAttributes: hasAttributes ? withoutCleared({ ...current.customAttributes, ...input.customAttributes }) : undefined,
      bumpCredentials: passwordHash !== undefined,
      externalId: input.externalId === undefined ? undefined : input.externalId || null,
      now: clock.now(),
    });
    const groupsChanged = assignments ? await groups.setUserGroups(trx, customerId, current.id, assignments) : false;
    const user = updated ?? current;
    // A password given is a change even when it is the same one: it is hashed anew and ends earlier credentials.
    if (passwordHash !== undefined || groupsChanged || profileChanged(current, user)) {
      await deps.audit.record(trx, customerId, { action: 'user.updated', target: userTarget(user) }, context);
    }
    return user;
  }

  async function applyDisabled(trx: Executor, customerId: number, user: User, isDisabled: boolean, context: AuditContext): Promise<User> {
    if (user.isDisabled === isDisabled) return user;
    // Disabling also retires issued JWTs for good: enabling again does not revive them.
    const updated = await repo.updateUser(trx, customerId, user.id, { isDisabled, bumpCredentials: isDisabled, now: clock.now() });
    if (!updated) throw new UserNotFound();
    await deps.audit.record(trx, customerId, { action: isDisabled ? 'user.disabled' : 'user.enabled', target: userTarget(updated) }, context);
    return updated;
  }

  return {
    async create(customerId, input, context) {
      const email = checkNewUser(input);
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null;
      try {
        return await db.transaction().execute(async (trx) => {
          return insertNew(trx, customerId, input, email, passwordHash, context);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw await explainConflict(customerId, input.username);
        throw error;
      }
    },

    async update(customerId, input, context) {
      checkChanges(input);
      const passwordHash = input.password !== undefined ? await hashPassword(input.password) : undefined;
      try {
        return await db.transaction().execute((trx) => updateExisting(trx, customerId, input, passwordHash, context));
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

    async remove(customerId, login, context) {
      await db.transaction().execute(async (trx) => {
        const user = await requireUser(customerId, login, trx);
        // A concurrent delete may have won since the lookup: then this one deleted nothing.
        if (!(await repo.deleteUser(trx, customerId, user.id))) throw new UserNotFound();
        await deps.audit.record(trx, customerId, { action: 'user.deleted', target: userTarget(user) }, context);
      });
    },

    async setDisabled(customerId, login, isDisabled, context) {
      return db.transaction().execute(async (trx) => applyDisabled(trx, customerId, await requireUser(customerId, login, trx), isDisabled, context));
    },

    async setDisabledIn(exec, customerId, userId, isDisabled, context) {
      const user = await repo.findUserById(exec, customerId, userId);
      if (!user) throw new UserNotFound();
      return applyDisabled(exec, customerId, user, isDisabled, context);
    },

    findByGuid: (exec, customerId, guid) => repo.findUserByGuid(exec ?? db, customerId, guid),

    count: (customerId) => repo.countUsers(db, customerId),

    search: (customerId, { mode, prefix, after, limit }) => searchUsers(db, customerId, mode, prefix, after, limit),

    findPage: (customerId, query) => findUsersContaining(db, customerId, query),

    findProblems(input, write) {
      const problems = checkUserInputFields(input, write);
      const named = new Set(problems.map((p) => p.field));
      const add = (field: string, reason: string) => { if (!named.has(field)) problems.push({ field, reason }); };
      if (write === 'create') {
        if (input.email === undefined && !looksLikeEmail(input.username)) add('email', 'is required');
        if (input.firstName === undefined) add('firstName', 'is required');
        if (input.lastName === undefined) add('lastName', 'is required');
      }
      if (input.password !== undefined && !named.has('password')) {
        try { checkPasswordRule(input.password); } catch (error) {
          if (!(error instanceof Invalid)) throw error;
          add('password', error.message.slice('password '.length));
        }
      }
      return problems;
    },

    async setPassword(customerId, userId, password, { requireChange, action = 'user.password.changed' }, context) {
      checkPasswordRule(password);
      const hash = await hashPassword(password);
      await db.transaction().execute(async (trx) => {
        const updated = await repo.updateUser(trx, customerId, userId, { passwordHash: hash, bumpCredentials: true, passwordChangeRequired: requireChange, now: clock.now() });
        if (!updated) throw new UserNotFound();
        // The actor is the context's: the admin's, or the user's on the hosted pages (reset, sign-in's new password).
        await deps.audit.record(trx, customerId, { action, target: userTarget(updated) }, context);
      });
    },

    recordSignIn: (customerId, userId) => signIns.recordSignIn(db, customerId, userId, clock.now(), SIGN_IN_WRITE_INTERVAL_MS),
    findLastSignIn: (customerId, userId) => signIns.findLastSignIn(db, customerId, userId),

    async changePassword(customerId, login, oldPassword, newPassword, context) {
      const user = await requireUser(customerId, login);
      const hash = await repo.findPasswordHash(db, customerId, user.id);
      if (hash === null || !(await verifyPassword(hash, oldPassword))) throw new Invalid('oldPassword', 'is incorrect');
      if (oldPassword === newPassword) throw new Invalid('password', 'must differ from the current password');
      checkPasswordRule(newPassword);
      const newHash = await hashPassword(newPassword);
      await db.transaction().execute(async (trx) => {
        const replaced = await repo.replacePasswordHash(trx, customerId, user.id, hash, newHash, clock.now());
        // Another change won meanwhile: the old password given is no longer the current one.
        if (!replaced) throw new Invalid('oldPassword', 'is incorrect');
        await deps.audit.record(trx, customerId, { action: 'user.password.changed', target: userTarget(user) }, context);
      });
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
      // Without an authenticator app a user's passkey is still a second factor: users/get names it.
      const shown = type === 'NONE' && await repo.hasPasskey(exec, customerId, userId) ? 'PASSKEY' : type;
      await repo.updateUser(exec, customerId, userId, { secondFactorType: shown, now: clock.now() });
    },

    findUsersByEmails: (exec, customerId, emails) => repo.findUsersByEmails(exec, customerId, emails),
    createIn: async (exec, customerId, input, passwordHash, context) => insertNew(exec, customerId, input, checkNewUser(input), passwordHash, context),
    updateIn: async (exec, customerId, input, passwordHash, context) => {
      checkChanges(input);
      return updateExisting(exec, customerId, input, passwordHash, context);
    },
  };
}
