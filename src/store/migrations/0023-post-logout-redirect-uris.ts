import type { Kysely } from 'kysely';

/**
 * OAUTH applications' registered post-logout redirect URIs (OpenID Connect RP-initiated logout): a JSON
 * text array like redirect_uris; '[]' for every existing application, so nothing changes for them.
 */
export function postLogoutRedirectUrisMigration() {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('applications').addColumn('post_logout_redirect_uris', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    },
  };
}
