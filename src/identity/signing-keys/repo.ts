/** Queries on `customer_signing_keys`: one row per customer. */
import type { Executor } from '../../store/db.ts';

export interface StoredSigningKey {
  customerId: number;
  kid: string;
  alg: string;
  publicJwk: string;
  privateJwkSealed: string;
}

export async function findSigningKey(db: Executor, customerId: number): Promise<StoredSigningKey | undefined> {
  const row = await db.selectFrom('customer_signing_keys')
    .select(['customer_id', 'kid', 'alg', 'public_jwk', 'private_jwk_sealed'])
    .where('customer_id', '=', customerId).executeTakeFirst();
  return row && {
    customerId: Number(row.customer_id),
    kid: row.kid,
    alg: row.alg,
    publicJwk: row.public_jwk,
    privateJwkSealed: row.private_jwk_sealed,
  };
}

/** Inserts unless the customer already has a key (another node may have won the race): the caller reads back. */
export async function insertSigningKeyIfAbsent(db: Executor, key: StoredSigningKey, createdAt: number): Promise<void> {
  await db.insertInto('customer_signing_keys').values({
    customer_id: key.customerId,
    kid: key.kid,
    alg: key.alg,
    public_jwk: key.publicJwk,
    private_jwk_sealed: key.privateJwkSealed,
    created_at: createdAt,
  }).onConflict((oc) => oc.column('customer_id').doNothing()).execute();
}
