/** Runs every migration not yet applied, in order; safe when several nodes start at once (Kysely's lock). */
import { Migrator, sql, type Migration } from 'kysely';
import type { Store } from '../db.ts';
import { customersMigration } from './0001-customers.ts';
import { usersGroupsMigration } from './0002-users-groups.ts';
import { mfaMigration } from './0003-mfa.ts';
import { siteMigration } from './0004-site.ts';
import { apiTokensMigration } from './0005-api-tokens.ts';
import { groupMembersByUserMigration } from './0006-group-members-by-user.ts';
import { userWireRecordMigration } from './0007-user-wire-record.ts';
import { changeNotificationsMigration } from './0008-change-notifications.ts';
import { mailOutboxMigration } from './0011-mail-outbox.ts';
import { dropUserWireRecordMigration } from './0009-drop-user-wire-record.ts';
import { applicationsMigration } from './0012-applications.ts';
import { customerSigningKeysAndOidcMigration } from './0013-customer-signing-keys-and-oidc.ts';
import { magicLinksMigration } from './0014-magic-links.ts';
import { consoleMigration } from './0015-console.ts';
import { replayGuardMigration } from './0016-replay-guard.ts';
import { magicLinkLookupsMigration } from './0017-magic-link-lookups.ts';
import { consoleFirstSignInsMigration } from './0018-console-first-sign-ins.ts';
import { consoleUsersMigration } from './0019-console-users.ts';
import { ssoSessionsMigration } from './0020-sso-sessions.ts';
import { signInFlowsMigration } from './0021-sign-in-flows.ts';
import { recoveryMigration } from './0022-recovery.ts';
import { postLogoutRedirectUrisMigration } from './0023-post-logout-redirect-uris.ts';
import { samlApplicationsMigration } from './0024-saml-applications.ts';
import { samlMigration } from './0025-saml.ts';
import { passkeysMigration } from './0026-passkeys.ts';
import { auditEventsMigration } from './0028-audit-events.ts';
import { webhooksMigration } from './0029-webhooks.ts';
import { scimMigration } from './0030-scim.ts';
import { scimExternalIdsMigration } from './0031-scim-external-ids.ts';
import { auditWriteCostMigration } from './0032-audit-write-cost.ts';
import { scimTokenReadsMigration } from './0033-scim-token-reads.ts';

const MAX_ATTEMPTS = 5;

/**
 * Kysely's migrator reads the catalog of every schema in the database; one that another client drops
 * meanwhile fails that read with "schema … does not exist" (3F000), "relation … does not exist" (42P01),
 * from its pg_get_serial_sequence "column … of relation … does not exist" (42703), naming one of that
 * schema's tables, or, when the drop lands between two catalog lookups of one statement, PostgreSQL's
 * internal "cache lookup failed for namespace …" (XX000). Exported for its test.
 */
export function isSchemaDroppedMeanwhile(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === '3F000' || code === '42P01' || code === '42703'
    || (code === 'XX000' && /^cache lookup failed for (namespace|relation)/.test(message ?? ''));
}

export async function migrate(store: Store): Promise<void> {
  const migrations: Record<string, Migration> = {
    '0001-customers': customersMigration(store.dialect),
    '0002-users-groups': usersGroupsMigration(store.dialect),
    '0003-mfa': mfaMigration(),
    '0004-site': siteMigration(store.dialect),
    '0005-api-tokens': apiTokensMigration(store.dialect),
    '0006-group-members-by-user': groupMembersByUserMigration(),
    '0007-user-wire-record': userWireRecordMigration(),
    '0008-change-notifications': changeNotificationsMigration(store.dialect),
    '0011-mail-outbox': mailOutboxMigration(store.dialect),
    '0009-drop-user-wire-record': dropUserWireRecordMigration(),
    '0012-applications': applicationsMigration(store.dialect),
    '0013-customer-signing-keys-and-oidc': customerSigningKeysAndOidcMigration(store.dialect),
    '0014-magic-links': magicLinksMigration(store.dialect),
    '0015-console': consoleMigration(store.dialect),
    '0016-replay-guard': replayGuardMigration(store.dialect),
    '0017-magic-link-lookups': magicLinkLookupsMigration(store.dialect),
    '0018-console-first-sign-ins': consoleFirstSignInsMigration(store.dialect),
    '0019-console-users': consoleUsersMigration(),
    '0020-sso-sessions': ssoSessionsMigration(store.dialect),
    '0021-sign-in-flows': signInFlowsMigration(),
    '0022-recovery': recoveryMigration(store.dialect),
    '0023-post-logout-redirect-uris': postLogoutRedirectUrisMigration(),
    '0024-saml-applications': samlApplicationsMigration(),
    '0025-saml': samlMigration(),
    '0026-passkeys': passkeysMigration(store.dialect),
    '0028-audit-events': auditEventsMigration(store.dialect),
    '0029-webhooks': webhooksMigration(store.dialect),
    '0030-scim': scimMigration(store.dialect),
    '0031-scim-external-ids': scimExternalIdsMigration(),
    '0032-audit-write-cost': auditWriteCostMigration(store.dialect),
    '0033-scim-token-reads': scimTokenReadsMigration(store.dialect),
  };
  // Kysely looks for its migration tables in every schema unless told one: with a second schema in
  // the database (tests use one per process) it would find that one's tables and skip creating ours.
  const schema = store.dialect === 'postgres'
    ? (await sql<{ name: string | null }>`select current_schema() as name`.execute(store.db)).rows[0]?.name ?? undefined
    : undefined;
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return;
    // Runs are transactional: retry.
    if (isSchemaDroppedMeanwhile(error) && attempt < MAX_ATTEMPTS) continue;
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}
