/** passkeys and passkey_ceremonies rows. A holder is (customer, user) or (customer, the console owner: user_id null). */
import type { Executor } from '../../store/db.ts';
import type { PasskeyHolder } from './types.ts';

export interface PasskeyRecord {
  id: number;
  customerId: number;
  userId: number | null;
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

export interface CeremonyRecord {
  customerId: number;
  userId: number | null;
  holderKind: HolderKind;
  purpose: 'register' | 'authenticate';
  challenge: string;
  expiresAt: number;
}

/** 'any': a username-less sign-in, which names nobody until the credential does. */
export type HolderKind = 'user' | 'owner' | 'any';

interface PasskeyRow {
  id: number | string;
  customer_id: number | string;
  user_id: number | string | null;
  credential_id: string;
  public_key: string;
  counter: number | string;
  transports: string;
  name: string;
  created_at: number | string;
  last_used_at: number | string | null;
}

function toRecord(row: PasskeyRow): PasskeyRecord {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    userId: row.user_id === null ? null : Number(row.user_id),
    credentialId: row.credential_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

export const holderKind = (holder: PasskeyHolder): HolderKind => (holder.userId === null ? 'owner' : 'user');

function ofHolder<Q extends { where: (...args: any[]) => Q }>(query: Q, holder: PasskeyHolder): Q {
  const scoped = query.where('customer_id', '=', holder.customerId);
  return holder.userId === null ? scoped.where('user_id', 'is', null) : scoped.where('user_id', '=', holder.userId);
}

export async function insertPasskey(db: Executor, passkey: Omit<PasskeyRecord, 'id'> & { deviceType: string; backedUp: boolean }): Promise<PasskeyRecord> {
  const row = await db.insertInto('passkeys').values({
    customer_id: passkey.customerId,
    user_id: passkey.userId,
    credential_id: passkey.credentialId,
    public_key: passkey.publicKey,
    counter: passkey.counter,
    transports: JSON.stringify(passkey.transports),
    device_type: passkey.deviceType,
    backed_up: passkey.backedUp ? 1 : 0,
    name: passkey.name,
    created_at: passkey.createdAt,
    last_used_at: passkey.lastUsedAt,
  }).returning('id').executeTakeFirstOrThrow();
  return { ...passkey, id: Number(row.id) };
}

export async function listPasskeys(db: Executor, holder: PasskeyHolder): Promise<PasskeyRecord[]> {
  const rows = await ofHolder(db.selectFrom('passkeys').selectAll(), holder).orderBy('id').execute();
  return rows.map(toRecord);
}

export async function countPasskeys(db: Executor, holder: PasskeyHolder): Promise<number> {
  const row = await ofHolder(db.selectFrom('passkeys').select((eb) => eb.fn.countAll<number | string>().as('n')), holder).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The customer's passkey with this credential ID (another customer's is not found). */
export async function findByCredentialId(db: Executor, customerId: number, credentialId: string): Promise<PasskeyRecord | undefined> {
  const row = await db.selectFrom('passkeys').selectAll()
    .where('customer_id', '=', customerId).where('credential_id', '=', credentialId).executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

/**
 * Records a use: the new counter and when. Conditional on the counter read before verifying, so two
 * concurrent uses of one assertion cannot both pass (the later one changes nothing and is refused).
 */
export async function recordUse(db: Executor, id: number, previousCounter: number, counter: number, at: number): Promise<boolean> {
  const result = await db.updateTable('passkeys').set({ counter, last_used_at: at })
    .where('id', '=', id).where('counter', '=', previousCounter).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function renamePasskey(db: Executor, holder: PasskeyHolder, id: number, name: string): Promise<boolean> {
  const result = await ofHolder(db.updateTable('passkeys').set({ name }), holder).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deletePasskey(db: Executor, holder: PasskeyHolder, id: number): Promise<boolean> {
  const result = await ofHolder(db.deleteFrom('passkeys'), holder).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** The users of the customer who have at least one passkey (users/get's secondFactorAuthType, the sign-in). */
export async function usersWithPasskeys(db: Executor, customerId: number, userIds: number[]): Promise<Set<number>> {
  if (userIds.length === 0) return new Set();
  const rows = await db.selectFrom('passkeys').select('user_id').distinct()
    .where('customer_id', '=', customerId).where('user_id', 'in', userIds).execute();
  return new Set(rows.map((r) => Number(r.user_id)));
}

export async function insertCeremony(db: Executor, idHash: string, ceremony: CeremonyRecord): Promise<void> {
  await db.insertInto('passkey_ceremonies').values({
    id_hash: idHash,
    customer_id: ceremony.customerId,
    user_id: ceremony.userId,
    holder_kind: ceremony.holderKind,
    purpose: ceremony.purpose,
    challenge: ceremony.challenge,
    expires_at: ceremony.expiresAt,
  }).execute();
}

/** Takes the ceremony: deletes it and returns what it was, once (a second take finds nothing). */
export async function takeCeremony(db: Executor, idHash: string): Promise<CeremonyRecord | undefined> {
  const row = await db.deleteFrom('passkey_ceremonies').where('id_hash', '=', idHash).returningAll().executeTakeFirst();
  if (!row) return undefined;
  return {
    customerId: Number(row.customer_id),
    userId: row.user_id === null ? null : Number(row.user_id),
    holderKind: row.holder_kind as HolderKind,
    purpose: row.purpose as CeremonyRecord['purpose'],
    challenge: row.challenge,
    expiresAt: Number(row.expires_at),
  };
}

/** Deletes ceremonies that ran out (the purge job). */
export async function deleteExpiredCeremonies(db: Executor, now: number): Promise<number> {
  const result = await db.deleteFrom('passkey_ceremonies').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * users.second_factor_type (users/get's secondFactorAuthType) names the passkey when it is the user's
 * only second factor: NONE becomes PASSKEY with the first passkey; an authenticator app's value stays.
 */
export async function markPasskeyFactor(db: Executor, customerId: number, userId: number): Promise<void> {
  await db.updateTable('users').set({ second_factor_type: PASSKEY_FACTOR })
    .where('customer_id', '=', customerId).where('id', '=', userId).where('second_factor_type', '=', 'NONE').execute();
}

/** PASSKEY back to NONE once the user's last passkey is gone. */
export async function unmarkPasskeyFactor(db: Executor, customerId: number, userId: number): Promise<void> {
  await db.updateTable('users').set({ second_factor_type: 'NONE' })
    .where('customer_id', '=', customerId).where('id', '=', userId).where('second_factor_type', '=', PASSKEY_FACTOR)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('passkeys').select('passkeys.id').whereRef('passkeys.user_id', '=', 'users.id'))))
    .execute();
}

/** The value of users/get's secondFactorAuthType for a user whose only second factor is a passkey. */
export const PASSKEY_FACTOR = 'PASSKEY';
