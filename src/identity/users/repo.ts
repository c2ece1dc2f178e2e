/**
 * Users queries. Paging: batch N of size S starts at the (N-1)*S-th user in id order. A plain
 * OFFSET walks every earlier row, so user_id_buckets keeps live users per block of 1024 ids;
 * a deep batch sums those counts to find its block, then walks at most 1023 rows inside it.
 *
 * Every write of a user row also rewrites its wire_record (the listing record as JSON, built by
 * wire.ts): a listing page then reads 500 short texts instead of 500 rows of 30 columns.
 */
import type { ExpressionBuilder, Selectable } from 'kysely';
import { compileOnce, jsonTextArray, type Executor } from '../../store/db.ts';
import type { Database, UsersTable } from '../../store/schema.ts';
import type { User, UserRecordView, UserWithGroups } from './types.ts';
import { toStoredRecordJson } from './wire.ts';

/** A record as stored: wire_record is null on rows written before the column existed. */
export type StoredUserRow = Omit<UserRecordView, 'wireRecord'> & { wireRecord: string | null };

export const BUCKET_BITS = 10;

export const normalise = (value: string): string => value.trim().toLowerCase();

/** Keeps wire_record in step with the row just written; returns the user. */
async function saveWireRecord(db: Executor, row: Selectable<UsersTable>): Promise<User> {
  const user = toUser(row);
  await db.updateTable('users').set({ wire_record: toStoredRecordJson(user) }).where('id', '=', row.id).execute();
  return user;
}

function toUser(row: Selectable<UsersTable>): User {
  return {
    id: row.id,
    customerId: row.customer_id,
    guid: row.guid,
    username: row.username,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    phone: row.phone,
    alternateEmail: row.alternate_email,
    hasPassword: row.password_hash !== null,
    passwordChangedAt: row.password_changed_at,
    role: row.role,
    isDisabled: row.disabled === 1,
    markForDeletion: row.mark_for_deletion === 1,
    idpEnabled: row.idp_enabled === 1,
    phoneVerified: row.phone_verified === 1,
    emailVerified: row.email_verified === 1,
    preferredLocale: row.preferred_locale,
    enforce2faOnNextLogin: row.enforce_2fa_next_login === 1,
    sourceType: row.source_type,
    sourceIdentifier: row.source_identifier,
    lastVerifiedAt: row.last_verified_at,
    secondFactorType: row.second_factor_type,
    customAttributes: JSON.parse(row.custom_attributes) as Record<string, string>,
    credentialsVersion: row.credentials_version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface NewUserRow {
  guid: string;
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  phone: string;
  alternateEmail: string;
  passwordHash: string | null;
  customAttributes: Record<string, string>;
  now: number;
}

export async function insertUser(db: Executor, customerId: number, values: NewUserRow): Promise<User> {
  const row = await db.insertInto('users').values({
    customer_id: customerId,
    guid: values.guid,
    username: values.username,
    username_norm: normalise(values.username),
    email: values.email,
    email_norm: normalise(values.email),
    first_name: values.firstName,
    last_name: values.lastName,
    phone: values.phone,
    alternate_email: values.alternateEmail,
    password_hash: values.passwordHash,
    password_changed_at: values.passwordHash ? values.now : null,
    custom_attributes: JSON.stringify(values.customAttributes),
    created_at: values.now,
    updated_at: values.now,
  }).returningAll().executeTakeFirstOrThrow();
  await adjustBucket(db, customerId, row.id, 1);
  return saveWireRecord(db, row);
}

async function adjustBucket(db: Executor, customerId: number, userId: number, delta: 1 | -1): Promise<void> {
  const bucket = Math.floor(userId / 2 ** BUCKET_BITS);
  await db.insertInto('user_id_buckets')
    .values({ customer_id: customerId, bucket, user_count: delta })
    .onConflict((oc) => oc.columns(['customer_id', 'bucket']).doUpdateSet((eb) => ({ user_count: eb('user_id_buckets.user_count', '+', delta) })))
    .execute();
}

export interface UserChanges {
  email?: string;
  firstName?: string;
  lastName?: string;
  phone?: string;
  alternateEmail?: string;
  passwordHash?: string;
  customAttributes?: Record<string, string>;
  isDisabled?: boolean;
  secondFactorType?: string;
  bumpCredentials?: boolean;
  now: number;
}

export async function updateUser(db: Executor, customerId: number, userId: number, changes: UserChanges): Promise<User | undefined> {
  const row = await db.updateTable('users').set((eb) => ({
    ...(changes.email !== undefined ? { email: changes.email, email_norm: normalise(changes.email) } : {}),
    ...(changes.firstName !== undefined ? { first_name: changes.firstName } : {}),
    ...(changes.lastName !== undefined ? { last_name: changes.lastName } : {}),
    ...(changes.phone !== undefined ? { phone: changes.phone } : {}),
    ...(changes.alternateEmail !== undefined ? { alternate_email: changes.alternateEmail } : {}),
    ...(changes.passwordHash !== undefined ? { password_hash: changes.passwordHash, password_changed_at: changes.now } : {}),
    ...(changes.customAttributes !== undefined ? { custom_attributes: JSON.stringify(changes.customAttributes) } : {}),
    ...(changes.isDisabled !== undefined ? { disabled: changes.isDisabled ? 1 : 0 } : {}),
    ...(changes.secondFactorType !== undefined ? { second_factor_type: changes.secondFactorType } : {}),
    ...(changes.bumpCredentials ? { credentials_version: eb('credentials_version', '+', 1) } : {}),
    updated_at: changes.now,
  })).where('customer_id', '=', customerId).where('id', '=', userId).returningAll().executeTakeFirst();
  return row && saveWireRecord(db, row);
}

/**
 * Row-locks the user until the transaction ends (a no-op update; SQLite already runs one writer at
 * a time) and returns the row as it is now: update merges attributes and replaces memberships from it.
 */
export async function lockUser(db: Executor, customerId: number, userId: number): Promise<User | undefined> {
  const row = await db.updateTable('users').set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('customer_id', '=', customerId).where('id', '=', userId).returningAll().executeTakeFirst();
  return row && toUser(row);
}

/** Replaces the password hash only while it is still `expectedHash`: two concurrent changes cannot both win. */
export async function replacePasswordHash(db: Executor, customerId: number, userId: number, expectedHash: string, newHash: string, now: number): Promise<boolean> {
  const row = await db.updateTable('users').set((eb) => ({
    password_hash: newHash,
    password_changed_at: now,
    credentials_version: eb('credentials_version', '+', 1),
    updated_at: now,
  })).where('customer_id', '=', customerId).where('id', '=', userId).where('password_hash', '=', expectedHash).returningAll().executeTakeFirst();
  if (!row) return false;
  await saveWireRecord(db, row);
  return true;
}

export async function deleteUser(db: Executor, customerId: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('users').where('customer_id', '=', customerId).where('id', '=', userId).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) return false;
  await adjustBucket(db, customerId, userId, -1);
  return true;
}

const selectUserById = compileOnce((db) => db.selectFrom('users').selectAll().where('customer_id', '=', 0).where('id', '=', 0));

export async function findUserById(db: Executor, customerId: number, userId: number): Promise<User | undefined> {
  const row = (await selectUserById(db, [customerId, userId]))[0];
  return row && toUser(row);
}

/** The group names of the outer query's user, in membership order (for jsonTextArray). */
const groupNamesOf = (eb: ExpressionBuilder<Database, 'users'>) => eb.selectFrom('group_members')
  .innerJoin('groups', 'groups.id', 'group_members.group_id')
  .select('groups.name as value')
  .whereRef('group_members.customer_id', '=', 'users.customer_id')
  .whereRef('group_members.user_id', '=', 'users.id')
  .orderBy('group_members.id');

// The row and its group names in one statement (GET /rest/api/2/myself runs this on every request).
const selectUserWithGroupsById = compileOnce((db) => db.selectFrom('users').selectAll('users')
  .select((eb) => jsonTextArray(db, groupNamesOf(eb)).as('groupsJson'))
  .where('users.customer_id', '=', 0).where('users.id', '=', 0));

export async function findUserWithGroupsById(db: Executor, customerId: number, userId: number): Promise<UserWithGroups | undefined> {
  const row = (await selectUserWithGroupsById(db, [customerId, userId]))[0];
  return row && { ...toUser(row), groups: JSON.parse(row.groupsJson) as string[] };
}

/** A login lookup's rows: a user whose username is its own e-mail comes back from both branches. */
const oncePerUser = <T extends { id: number }>(rows: T[]): T[] => (rows.length === 2 && rows[0].id === rows[1].id ? rows.slice(0, 1) : rows);

/** Users whose username or e-mail equals `login` (case-insensitive): at most two rows. */
// Two unique-index lookups: SQLite runs the equivalent OR as a multi-index rowset, 3x the cost
// (measured by bench/: users/get spends most of its database time here).
const selectByLogin = compileOnce((db) => db.selectFrom('users').selectAll().where('customer_id', '=', 0).where('username_norm', '=', '')
  .unionAll(db.selectFrom('users').selectAll().where('customer_id', '=', 0).where('email_norm', '=', '')));

export async function findUsersByLogin(db: Executor, customerId: number, login: string): Promise<User[]> {
  const norm = normalise(login);
  return oncePerUser(await selectByLogin(db, [customerId, norm, customerId, norm])).map(toUser);
}

// One statement per lookup (the union of the username and e-mail branches, each with its group
// names): users/get is a single round trip to the database.
const selectRecordViewsByLogin = compileOnce((db) => {
  const branch = (column: 'username_norm' | 'email_norm') => db.selectFrom('users')
    .select((eb) => [
      'users.id', 'users.guid', 'users.username', 'users.email', 'users.phone',
      'users.second_factor_type as secondFactorType', 'users.role', 'users.wire_record as wireRecord',
      jsonTextArray(db, groupNamesOf(eb)).as('groupsJson'),
    ])
    .where('users.customer_id', '=', 0).where(`users.${column}`, '=', '');
  return branch('username_norm').unionAll(branch('email_norm'));
});

/** findUsersByLogin's candidates as stored records (wireRecord null for rows older than the column). */
export async function findRecordViewsByLogin(db: Executor, customerId: number, login: string): Promise<StoredUserRow[]> {
  const norm = normalise(login);
  return oncePerUser(await selectRecordViewsByLogin(db, [customerId, norm, customerId, norm]) as StoredUserRow[]);
}

export async function findUserByUsername(db: Executor, customerId: number, username: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('username_norm', '=', normalise(username)).executeTakeFirst();
  return row && toUser(row);
}

export async function findUsersByEmails(db: Executor, customerId: number, emails: string[]): Promise<User[]> {
  if (emails.length === 0) return [];
  const rows = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('email_norm', 'in', emails.map(normalise)).execute();
  return rows.map(toUser);
}

export async function findPasswordHash(db: Executor, customerId: number, userId: number): Promise<string | null> {
  const row = await db.selectFrom('users').select('password_hash')
    .where('customer_id', '=', customerId).where('id', '=', userId).executeTakeFirst();
  return row?.password_hash ?? null;
}

/** Where position `offset` of the customer's users starts: ids >= fromId, then skip rows; null past the end. */
async function pageStart(db: Executor, customerId: number, offset: number): Promise<{ fromId: number; skip: number } | null> {
  let fromId = 0;
  let skip = offset;
  if (offset > 0) {
    const buckets = await db.selectFrom('user_id_buckets').select(['bucket', 'user_count'])
      .where('customer_id', '=', customerId).where('user_count', '>', 0).orderBy('bucket').execute();
    let seen = 0;
    let found = false;
    for (const { bucket, user_count } of buckets) {
      if (seen + user_count > offset) {
        fromId = bucket * 2 ** BUCKET_BITS;
        skip = offset - seen;
        found = true;
        break;
      }
      seen += user_count;
    }
    if (!found) return null;
  }
  return { fromId, skip };
}

/** The users at positions [offset, offset + limit) in creation order. */
export async function listUsersPage(db: Executor, customerId: number, offset: number, limit: number): Promise<User[]> {
  const start = await pageStart(db, customerId, offset);
  if (!start) return [];
  const rows = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('id', '>=', start.fromId)
    .orderBy('id').limit(limit).offset(start.skip).execute();
  return rows.map(toUser);
}

// A listing page: each user's stored record and group names, one statement whatever the page size.
const selectRecordsFrom = compileOnce((db) => db.selectFrom('users')
  .select((eb) => ['users.id', 'users.wire_record as wireRecord', jsonTextArray(db, groupNamesOf(eb)).as('groupsJson')])
  .where('users.customer_id', '=', 0).where('users.id', '>=', 0)
  .orderBy('users.id').limit(0).offset(0));

/** The same page as listUsersPage, as stored records with group names (wireRecord null for rows older than the column). */
export async function listRecordsPage(db: Executor, customerId: number, offset: number, limit: number): Promise<Pick<StoredUserRow, 'id' | 'wireRecord' | 'groupsJson'>[]> {
  const start = await pageStart(db, customerId, offset);
  if (!start) return [];
  return selectRecordsFrom(db, [customerId, start.fromId, limit, start.skip]);
}

/** End users not marked for deletion. */
export async function countUsers(db: Executor, customerId: number): Promise<number> {
  const total = await db.selectFrom('user_id_buckets').select((eb) => eb.fn.sum<number>('user_count').as('n'))
    .where('customer_id', '=', customerId).executeTakeFirst();
  const marked = await db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('customer_id', '=', customerId).where('mark_for_deletion', '=', 1).executeTakeFirst();
  return Number(total?.n ?? 0) - Number(marked?.n ?? 0);
}
