/** Queries on `customer_signing_keys`: one row per customer. */
import type { Executor } from '../../store/db.ts';

export interface StoredSigningKey {
  customerId: number;
  kid: string;
  alg: string;
  publicJwk: string;
  privateJwkSealed: string;
}

/** A stored key with what its SAML certificate is made from. */
export interface SigningKeyRow extends StoredSigningKey {
  createdAt: number;
  customerKey: string;
}

export async function findSigningKey(db: Executor, customerId: number): Promise<SigningKeyRow | undefined> {
  const row = await db.selectFrom('customer_signing_keys')
    .innerJoin('customers', 'customers.id', 'customer_signing_keys.customer_id')
    .select(['customer_signing_keys.customer_id', 'customer_signing_keys.kid', 'customer_signing_keys.alg', 'customer_signing_keys.public_jwk',
      'customer_signing_keys.private_jwk_sealed', 'customer_signing_keys.created_at', 'customers.customer_key'])
    .where('customer_signing_keys.customer_id', '=', customerId).executeTakeFirst();
  return row && {
    customerId: Number(row.customer_id),
    kid: row.kid,
    alg: row.alg,
    publicJwk: row.public_jwk,
    privateJwkSealed: row.private_jwk_sealed,
    createdAt: Number(row.created_at),
    customerKey: row.customer_key,
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
