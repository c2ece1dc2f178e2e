/**
 * oidc-provider's storage adapter on Kysely (both dialects): every model of one customer's provider
 * (sessions, interactions, codes, grants, tokens) is a row of `oidc_models`, so that any node can
 * continue a flow another node began. Clients are not stored: they are the customer's OAUTH
 * applications, read through `findClient` on every lookup (a deleted application stops at once).
 * The API is the one oidc-provider documents in example/my_adapter.js.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';

/** Model payloads as oidc-provider hands them over (only the fields indexed here are typed). */
export interface ModelPayload {
  grantId?: string;
  uid?: string;
  userCode?: string;
  consumed?: number;
  [key: string]: unknown;
}

export interface OidcAdapter {
  upsert(id: string, payload: ModelPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<ModelPayload | undefined>;
  findByUid(uid: string): Promise<ModelPayload | undefined>;
  findByUserCode(userCode: string): Promise<ModelPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

export interface AdapterDeps {
  db: Kysely<Database>;
  customerId: number;
  /** Client metadata for a client_id of this customer, or undefined. */
  findClient(clientId: string): Promise<ModelPayload | undefined>;
  /** oidc-provider's InvalidGrant: what a second redemption of one code gets. */
  alreadyConsumed: new (description: string) => Error;
}

/** Expired rows are deleted by upserts, at most once a minute per node and customer. */
const SWEEP_EVERY_MS = 60_000;

/**
 * The adapter factory oidc-provider calls once per model name. Times are oidc-provider's own
 * (real time, epoch seconds in payloads): its expiry checks and ours must agree. So Date.now, not
 * the service's clock: oidc-provider reads Date.now itself and cannot be handed a clock.
 */
export function kyselyAdapterFactory(deps: AdapterDeps): (name: string) => OidcAdapter {
  const { db, customerId } = deps;
  let lastSweep = 0;

  async function sweep(): Promise<void> {
    const now = Date.now();
    if (now - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = now;
    await db.deleteFrom('oidc_models').where('customer_id', '=', customerId).where('expires_at', '<', now).execute();
  }

  const live = (row: { payload: string; expires_at: number | null; consumed_at: number | null } | undefined): ModelPayload | undefined => {
    if (!row) return undefined;
    if (row.expires_at !== null && Number(row.expires_at) <= Date.now()) return undefined;
    const payload = JSON.parse(row.payload) as ModelPayload;
    // consume() marks the row only; the payload's `consumed` (epoch seconds) is what oidc-provider reads.
    return row.consumed_at === null ? payload : { ...payload, consumed: Math.floor(Number(row.consumed_at) / 1000) };
  };

  return (kind: string): OidcAdapter => {
    const rows = () => db.selectFrom('oidc_models').select(['payload', 'expires_at', 'consumed_at'])
      .where('customer_id', '=', customerId).where('kind', '=', kind);

    if (kind === 'Client') {
      // Dynamic registration is off: clients are never written, only found.
      const none = async () => undefined;
      return {
        upsert: async () => { throw new Error('clients are the customer\'s OAUTH applications'); },
        find: (id) => deps.findClient(id),
        findByUid: none, findByUserCode: none, consume: async () => {}, destroy: async () => {}, revokeByGrantId: async () => {},
      };
    }

    return {
      async upsert(id, payload, expiresIn) {
        const values = {
          payload: JSON.stringify(payload),
          grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
          uid: typeof payload.uid === 'string' ? payload.uid : null,
          user_code: typeof payload.userCode === 'string' ? payload.userCode : null,
          expires_at: expiresIn ? Date.now() + expiresIn * 1000 : null,
        };
        await db.insertInto('oidc_models').values({ customer_id: customerId, kind, id, consumed_at: null, ...values })
          // A row of another customer with the same (kind, id) is never overwritten.
          .onConflict((oc) => oc.columns(['kind', 'id']).doUpdateSet(values).where('oidc_models.customer_id', '=', customerId))
          .execute();
        await sweep();
      },

      find: async (id) => live(await rows().where('id', '=', id).executeTakeFirst()),
      findByUid: async (uid) => live(await rows().where('uid', '=', uid).executeTakeFirst()),
      findByUserCode: async (userCode) => live(await rows().where('user_code', '=', userCode).executeTakeFirst()),

      // Atomic: of two nodes redeeming one authorization code at once, one wins, the other is refused.
      async consume(id) {
        const result = await db.updateTable('oidc_models').set({ consumed_at: Date.now() })
          .where('customer_id', '=', customerId).where('kind', '=', kind).where('id', '=', id)
          .where('consumed_at', 'is', null).executeTakeFirst();
        if (Number(result.numUpdatedRows) === 0) throw new deps.alreadyConsumed(`${kind} already consumed`);
      },

      async destroy(id) {
        await db.deleteFrom('oidc_models').where('customer_id', '=', customerId).where('kind', '=', kind).where('id', '=', id).execute();
      },

      async revokeByGrantId(grantId) {
        await db.deleteFrom('oidc_models').where('customer_id', '=', customerId).where('grant_id', '=', grantId).execute();
      },
    };
  };
}
