import type { Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/**
 * Each customer's RS256 signing key (the JWT application's id_token and the customer's OpenID provider),
 * and the state of the customers' OpenID providers (oidc-provider's models: sessions, interactions,
 * codes, grants, tokens), kept in the database so that any node can continue a flow another one began.
 */
export function customerSigningKeysAndOidcMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('customer_signing_keys'), dialect)
        // One key per customer: the unique index makes "create on first use" safe when two nodes race.
        .addColumn('customer_id', 'bigint', (c) => c.notNull().unique().references('customers.id').onDelete('cascade'))
        .addColumn('kid', 'text', notNull)
        .addColumn('alg', 'text', notNull)
        // The public JWK as JSON; the private JWK sealed under the master key (aad binds customer and kid).
        .addColumn('public_jwk', 'text', notNull)
        .addColumn('private_jwk_sealed', 'text', notNull)
        .addColumn('created_at', instant, notNull)
        .execute();

      await db.schema.createTable('oidc_models')
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // oidc-provider's model name ('Session', 'Interaction', 'AuthorizationCode', 'Grant', …) and id.
        .addColumn('kind', 'text', notNull)
        .addColumn('id', 'text', notNull)
        // The model's payload as JSON text.
        .addColumn('payload', 'text', notNull)
        .addColumn('grant_id', 'text')
        .addColumn('uid', 'text')
        .addColumn('user_code', 'text')
        .addColumn('expires_at', instant)
        .addColumn('consumed_at', instant)
        .addPrimaryKeyConstraint('oidc_models_pk', ['kind', 'id'])
        .execute();
      await db.schema.createIndex('oidc_models_grant').on('oidc_models').columns(['grant_id']).execute();
      await db.schema.createIndex('oidc_models_uid').on('oidc_models').columns(['kind', 'uid']).execute();
      await db.schema.createIndex('oidc_models_user_code').on('oidc_models').columns(['kind', 'user_code']).execute();
      await db.schema.createIndex('oidc_models_expires').on('oidc_models').columns(['expires_at']).execute();
      await db.schema.createIndex('oidc_models_customer').on('oidc_models').columns(['customer_id']).execute();
    },
  };
}
