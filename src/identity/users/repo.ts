/**
 * Users queries. Paging: batch N of size S starts at the (N-1)*S-th user in id order.
 * A plain OFFSET walks every earlier row, so user_id_buckets keeps the count of live users per block
 * of 1024 ids: a deep batch sums those counts to find its block, then walks at most 1023 rows inside it
 * (measured at 1M users: 12 ms for a deep batch, against 84 ms with OFFSET on SQLite and 11-13 s on PostgreSQL).
 */
import { sql, type RawBuilder, type Selectable } from 'kysely';
import { forUpdate, type Executor } from '../../store/db.ts';
import type { UsersTable } from '../../store/schema.ts';
import type { User } from './types.ts';

export const BUCKET_BITS = 10;

export const normalise = (value: string): string => value.trim().toLowerCase();

export function toUser(row: Selectable<UsersTable>): User {
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
    passwordChangeRequired: row.password_change_required === 1,
    externalId: row.scim_external_id ?? null,
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
  externalId?: string | null;
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
    ...(values.externalId ? { scim_external_id: values.externalId } : {}),
    created_at: values.now,
    updated_at: values.now,
  }).returningAll().executeTakeFirstOrThrow();
  await adjustBucket(db, customerId, row.id, 1);
  return toUser(row);
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
  /** Whether the user must change the password at the next sign-in (a password set for them). */
  passwordChangeRequired?: boolean;
  /** SCIM's externalId; null clears it. */
  externalId?: string | null;
  now: number;
}

/**
 * Writes the given changes and returns the row as written. Plain SQL, as lockUser: it runs in every
 * change of a user, and Kysely's query builder cost more CPU than SQLite's update (users/update's profile).
 */
export async function updateUser(db: Executor, customerId: number, userId: number, changes: UserChanges): Promise<User | undefined> {
  const sets: RawBuilder<unknown>[] = [];
  if (changes.email !== undefined) sets.push(sql`email = ${changes.email}`, sql`email_norm = ${normalise(changes.email)}`);
  if (changes.firstName !== undefined) sets.push(sql`first_name = ${changes.firstName}`);
  if (changes.lastName !== undefined) sets.push(sql`last_name = ${changes.lastName}`);
  if (changes.phone !== undefined) sets.push(sql`phone = ${changes.phone}`);
  if (changes.alternateEmail !== undefined) sets.push(sql`alternate_email = ${changes.alternateEmail}`);
  if (changes.passwordHash !== undefined) sets.push(sql`password_hash = ${changes.passwordHash}`, sql`password_changed_at = ${changes.now}`);
  if (changes.customAttributes !== undefined) sets.push(sql`custom_attributes = ${JSON.stringify(changes.customAttributes)}`);
  if (changes.isDisabled !== undefined) sets.push(sql`disabled = ${changes.isDisabled ? 1 : 0}`);
  if (changes.secondFactorType !== undefined) sets.push(sql`second_factor_type = ${changes.secondFactorType}`);
  if (changes.bumpCredentials) sets.push(sql`credentials_version = credentials_version + 1`);
  if (changes.passwordChangeRequired !== undefined) sets.push(sql`password_change_required = ${changes.passwordChangeRequired ? 1 : 0}`);
  if (changes.externalId !== undefined) sets.push(sql`scim_external_id = ${changes.externalId}`);
  sets.push(sql`updated_at = ${changes.now}`);
  const { rows } = await sql<Selectable<UsersTable>>`update users set ${sql.join(sets)} where customer_id = ${customerId} and id = ${userId} returning *`.execute(db);
  return rows[0] && toUser(rows[0]);
}

/**
 * The user as it is now, row-locked until the transaction ends (forUpdate): update merges attributes
 * and replaces memberships from it, so concurrent changes of one user apply one after the other.
 * Plain SQL: it starts every change of a user, and building it with Kysely cost more CPU than running
 * it (the bench's profile of users/update).
 */
export async function lockUser(db: Executor, customerId: number, userId: number): Promise<User | undefined> {
  const { rows } = await sql<Selectable<UsersTable>>`select * from users where customer_id = ${customerId} and id = ${userId}${forUpdate(db)}`.execute(db);
  return rows[0] && toUser(rows[0]);
}

/** lockUser by username: one statement finds the user and locks its row. */
export async function lockUserByUsername(db: Executor, customerId: number, username: string): Promise<User | undefined> {
  const { rows } = await sql<Selectable<UsersTable>>`select * from users where customer_id = ${customerId} and username_norm = ${normalise(username)}${forUpdate(db)}`.execute(db);
  return rows[0] && toUser(rows[0]);
}

/** Replaces the password hash only while it is still `expectedHash`: two concurrent changes cannot both win. */
export async function replacePasswordHash(db: Executor, customerId: number, userId: number, expectedHash: string, newHash: string, now: number): Promise<boolean> {
  const result = await db.updateTable('users').set((eb) => ({
    password_hash: newHash,
    password_changed_at: now,
    credentials_version: eb('credentials_version', '+', 1),
    // The user chose this password: a change an administrator asked for is done.
    password_change_required: 0,
    updated_at: now,
  })).where('customer_id', '=', customerId).where('id', '=', userId).where('password_hash', '=', expectedHash).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteUser(db: Executor, customerId: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('users').where('customer_id', '=', customerId).where('id', '=', userId).executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) return false;
  await adjustBucket(db, customerId, userId, -1);
  return true;
}

export async function findUserById(db: Executor, customerId: number, userId: number): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('customer_id', '=', customerId).where('id', '=', userId).executeTakeFirst();
  return row && toUser(row);
}

/** Users whose username or e-mail equals `login` (case-insensitive): at most two, once each. */
export async function findUsersByLogin(db: Executor, customerId: number, login: string): Promise<User[]> {
  const norm = normalise(login);
  // Two unique-index lookups: SQLite runs the equivalent OR as a multi-index rowset, 3x the cost.
  const rows = await db.selectFrom('users').selectAll().where('customer_id', '=', customerId).where('username_norm', '=', norm)
    .unionAll(db.selectFrom('users').selectAll().where('customer_id', '=', customerId).where('email_norm', '=', norm))
    .execute();
  // A user whose username is its own e-mail comes back from both branches.
  return (rows.length === 2 && rows[0].id === rows[1].id ? rows.slice(0, 1) : rows).map(toUser);
}

/** By the public id (SCIM's `id`). */
export async function findUserByGuid(db: Executor, customerId: number, guid: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('customer_id', '=', customerId).where('guid', '=', guid).executeTakeFirst();
  return row && toUser(row);
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

/** The users at positions [offset, offset + limit) in creation (id) order. */
export async function listUsersPage(db: Executor, customerId: number, offset: number, limit: number): Promise<User[]> {
  // Position `offset` is in the first block whose running count of users exceeds it.
  let fromId = 0;
  let skip = offset;
  if (offset > 0) {
    const buckets = await db.selectFrom('user_id_buckets').select(['bucket', 'user_count'])
      .where('customer_id', '=', customerId).where('user_count', '>', 0).orderBy('bucket').execute();
    const block = buckets.find(({ user_count }) => {
      if (skip < user_count) return true;
      skip -= user_count;
      return false;
    });
    if (!block) return [];
    fromId = block.bucket * 2 ** BUCKET_BITS;
  }
  const rows = await db.selectFrom('users').selectAll()
    .where('customer_id', '=', customerId).where('id', '>=', fromId)
    .orderBy('id').limit(limit).offset(skip).execute();
  return rows.map(toUser);
}

/** End users not marked for deletion. */
export async function countUsers(db: Executor, customerId: number): Promise<number> {
  const total = await db.selectFrom('user_id_buckets').select((eb) => eb.fn.sum<number>('user_count').as('n'))
    .where('customer_id', '=', customerId).executeTakeFirst();
  const marked = await db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('customer_id', '=', customerId).where('mark_for_deletion', '=', 1).executeTakeFirst();
  return Number(total?.n ?? 0) - Number(marked?.n ?? 0);
}

/** True when the user has a passkey (identity/passkeys): a second factor besides an authenticator app. */
export async function hasPasskey(db: Executor, customerId: number, userId: number): Promise<boolean> {
  const row = await db.selectFrom('passkeys').select('id').where('customer_id', '=', customerId).where('user_id', '=', userId).limit(1).executeTakeFirst();
  return row !== undefined;
}
