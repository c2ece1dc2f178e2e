/**
 * The identity face's services, built once: the admin API's domains, applications with their login
 * policies and OAuth clients, magic links and their OAuth tokens, the customers' OpenID providers,
 * and the console owners' accounts and sessions; then the parts the face mounts (admin areas, the
 * route sets outside /api).
 */
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { auditPurgeJob } from '../audit/purge.ts';
import { createAuditService, type AuditService } from '../audit/service.ts';
import { createOwnerPasskeysService, type OwnerPasskeysService } from '../console/owners/passkeys.ts';
import { createConsoleFirstSignInService, type ConsoleFirstSignInService } from '../console/first-sign-in/service.ts';
import { createConsoleOwnersService, type ConsoleOwnersService } from '../console/owners/service.ts';
import { createConsoleSessionsService, type ConsoleSessionsService } from '../console/sessions/service.ts';
import { createAccountService, type AccountService } from '../identity/account/service.ts';
import { createAccountFactorsService, type AccountFactorsService } from '../identity/account/factors.ts';
import { createStepUps } from '../identity/account/step-up.ts';
import { createApplicationsService, type ApplicationsService } from '../identity/applications/service.ts';
import { createCustomersService, type CustomersService } from '../identity/customers/service.ts';
import { createGroupsService, type GroupsService } from '../identity/groups/service.ts';
import { createGroupProvisioningService, type GroupProvisioningService } from '../identity/groups/provisioning.ts';
import { magicLinkPurgeJob } from '../identity/magic-links/purge.ts';
import { createMagicLinksService, type MagicLinksService } from '../identity/magic-links/service.ts';
import { createMfaService, type MfaService } from '../identity/mfa/service.ts';
import { createOauthClientsService, type OauthClientsService } from '../identity/oauth-clients/service.ts';
import { createOauthTokenService, type OauthTokenService } from '../identity/oauth-token/service.ts';
import { createOidcService, type OidcService } from '../identity/oidc/service.ts';
import { createPasswordResetsService, type PasswordResetsService } from '../identity/password-resets/service.ts';
import { createPasskeysService, type PasskeysService } from '../identity/passkeys/service.ts';
import { createPoliciesService, type PoliciesService } from '../identity/policies/service.ts';
import { createSigningKeysService, type SigningKeysService } from '../identity/signing-keys/service.ts';
import { createRecoveryCodesService, type RecoveryCodesService } from '../identity/recovery-codes/service.ts';
import { samlPurgeJob } from '../identity/saml/purge.ts';
import { createSamlService, type SamlService } from '../identity/saml/service.ts';
import { createSsoSessionsService, type SsoSessionsService } from '../identity/sso-sessions/service.ts';
import { createSignInService, type SignInService } from '../identity/sign-in/service.ts';
import { createSignInEvents } from '../identity/sign-in/events.ts';
import { createLoginThrottle } from '../store/throttles/login.ts';
import { createUserExportService, type UserExportService } from '../identity/users/export.ts';
import { createUserImportService, type UserImportService } from '../identity/users/import.ts';
import { createUsersService, type UsersService } from '../identity/users/service.ts';
import { createUserProvisioningService, type UserProvisioningService } from '../identity/users/provisioning.ts';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import type { ChangeFeed } from '../store/changes.ts';
import type { ClusterJob } from '../store/cluster-jobs.ts';
import type { Database } from '../store/schema.ts';
import type { ThrottleStore } from '../store/throttles/types.ts';
import type { Dialect } from '../store/db.ts';
import type { OutboxWorker } from '../outbox/worker.ts';
import { createScimTokensService, type ScimTokensService } from '../scim/tokens/service.ts';
import type { WebhooksService } from '../webhooks/service.ts';
import type { Mail } from './mail.ts';
import { composeWebhooks } from './webhooks.ts';

export interface IdentityServices {
  /** The audit log: every service records its changes here; the admin API, console and CLI read it. */
  audit: AuditService;
  /** Webhook endpoints (the audit log's listener writes their deliveries). */
  webhooks: WebhooksService;
  /** SCIM bearer tokens: the admin API, CLI and console create them; every /scim/v2 request is authenticated by one. */
  scimTokens: ScimTokensService;
  customers: CustomersService;
  users: UsersService;
  groups: GroupsService;
  /** Users and groups as SCIM provisions them (by guid and id, with externalId and members): the /scim/v2 face's. */
  userProvisioning: UserProvisioningService;
  groupProvisioning: GroupProvisioningService;
  /** Bulk import and export (the CLI's users import / users export). */
  userImport: UserImportService;
  userExport: UserExportService;
  mfa: MfaService;
  applications: ApplicationsService;
  policies: PoliciesService;
  oauthClients: OauthClientsService;
  signingKeys: SigningKeysService;
  /** The customers' OpenID providers; beginProviderLogin is the magic-link landing's way in. */
  oidc: OidcService;
  magicLinks: MagicLinksService;
  /** End users' SSO sessions (the sign-in pages, the landing, sign-out, the console, users/sessions/revoke). */
  ssoSessions: SsoSessionsService;
  /** The hosted sign-in flows (the OAUTH interaction, JWT authorize, SAML). */
  signIn: SignInService;
  /** Users' single-use recovery codes (the second-factor steps, enrolment, the landing). */
  recoveryCodes: RecoveryCodesService;
  /** Users' and console owners' passkeys (WebAuthn): the sign-in, the account pages, the admin API, the console. */
  passkeys: PasskeysService;
  /** Forgotten passwords: the mailed reset links (the pages at <issuer>/forgot and <issuer>/reset/<token>). */
  passwordResets: PasswordResetsService;
  /** The changes a signed-in user makes at <issuer>/account that span services (a password change). */
  account: AccountService;
  /** The customers' SAML identity providers: requests checked, held for sign-in, answered; single logout. */
  saml: SamlService;
  /** The factors a signed-in user manages at <issuer>/account (authenticator app, passkeys), removals behind a step-up. */
  accountFactors: AccountFactorsService;
  oauthTokens: OauthTokenService;
  /** The console owners' credentials (the CLI's set-password) and their sessions. */
  consoleOwners: ConsoleOwnersService;
  /** The console owner's passkey sign-in (its passkeys are the passkeys service's, holder userId null). */
  consoleOwnerPasskeys: OwnerPasskeysService;
  consoleSessions: ConsoleSessionsService;
  /** The owner's one-time sign-in links (the first start prints one). */
  consoleFirstSignIn: ConsoleFirstSignInService;
}

export interface IdentityDeps {
  config: Config;
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  /** Derives OAUTH applications' client secrets (applications/client-secret.ts), the providers' keys and the recovery codes' hashing key. */
  masterKey: Buffer;
  /** Undefined: no read cache (LATCHKEY_READ_CACHE=false). */
  changes: ChangeFeed | undefined;
  /** Where the login throttles and the per-user generate cap count (the database, or Redis). */
  throttles: ThrottleStore;
  mail: Mail;
  dialect: Dialect;
}

export interface Identity {
  services: IdentityServices;
  /** Deletes old links, expired logins and tokens, old mails and password resets (magic-links/purge.ts); once per cluster. */
  magicLinkPurge: ClusterJob;
  /** Deletes SAML request IDs and held requests once expired (saml/purge.ts); once per cluster. */
  samlPurge: ClusterJob;
  /** Deletes audit events older than LATCHKEY_AUDIT_RETENTION_DAYS (audit/purge.ts); once per cluster. */
  auditPurge: ClusterJob;
  /** Delivers webhooks (webhooks/worker.ts); every node runs one. */
  webhookWorker: OutboxWorker;
}

/**
 * The console owners' credentials, their sessions (set-password ends every console session) and
 * their one-time sign-in links.
 */
export function createConsoleAccounts(deps: { db: Kysely<Database>; clock: Clock; sealer: Sealer; throttles?: ThrottleStore }): {
  owners: ConsoleOwnersService; sessions: ConsoleSessionsService; firstSignIn: ConsoleFirstSignInService;
} {
  const owners = createConsoleOwnersService(deps);
  return {
    owners,
    sessions: createConsoleSessionsService(deps),
    firstSignIn: createConsoleFirstSignInService({ db: deps.db, clock: deps.clock, owners }),
  };
}

export function composeIdentity(deps: IdentityDeps): Identity {
  const { config, db, clock, sealer, masterKey, changes, throttles, mail } = deps;
  const audit = createAuditService({ db, clock });
  const webhooks = composeWebhooks({ config, db, dialect: deps.dialect, clock, sealer, audit, changes: deps.changes });
  let users: UsersService | undefined;
  const groups = createGroupsService({ db, clock, audit, findUsersByEmails: (exec, customerId, emails) => users!.findUsersByEmails(exec, customerId, emails) });
  users = createUsersService({ db, clock, groups, audit, changes });
  const customers = createCustomersService({
    db, clock, sealer, audit,
    cacheMs: config.admin.customerCacheMs,
    createDefaultGroup: (trx, customerId) => groups.createDefaultGroup(trx, customerId),
  });
  const mfa = createMfaService({ db, clock, sealer, users, audit });
  const applications = createApplicationsService({ db, clock, masterKey, audit, changes });
  const policies = createPoliciesService({ db, clock, applications, audit, changes });
  const oauthClients = createOauthClientsService({ db, clock, audit });
  const signingKeys = createSigningKeysService({ db, sealer, clock });
  const ssoSessions = createSsoSessionsService({ db, clock, users, audit, secure: config.publicUrl.startsWith('https:'), limits: config.sso });
  const recoveryCodes = createRecoveryCodesService({ db, clock, masterKey, users });
  const saml = createSamlService({ db, clock, applications, users, signingKeys, ssoSessions, sealer, masterKey });
  const passkeys = createPasskeysService({ db, clock, publicUrl: config.publicUrl, audit, findUser: (customerId, userId) => users.findById(customerId, userId) });
  let signIn: SignInService | undefined;
  const oidc = createOidcService({
    db, clock, publicUrl: config.publicUrl, masterKey, customers, users, applications, signingKeys, ssoSessions,
    async loginSatisfied(customerId, applicationUuid, accountId, ssoValue) {
      const application = await applications.findByUuid(db, customerId, applicationUuid);
      const signedIn = application && await signIn!.satisfyingSession(customerId, application, ssoValue);
      return signedIn !== undefined && String(signedIn.user.id) === accountId;
    },
  });
  // One recorder of sign-in outcomes for both ways in: the hosted sign-in and the magic link's landing.
  const signInEvents = createSignInEvents({ db, audit });
  const magicLinks = createMagicLinksService({
    db,
    throttles,
    clock,
    audit,
    publicUrl: config.publicUrl,
    users,
    applications,
    policies,
    mfa,
    outbox: mail.outbox,
    mailEnqueued: () => mail.worker.kick(),
    signJwt: (customerId, claims, options) => signingKeys.signJwt(customerId, claims, options),
    issuer: (customerKey) => oidc.customerIssuer(customerKey),
    ssoSessions,
    recoveryCodes,
    saml,
    passkeys,
    signInEvents,
  });
  // The site's token endpoint's settings over the same store: a password guessed here or there counts once.
  const loginThrottle = createLoginThrottle({ store: throttles, db, clock, ...config.site.login });
  signIn = createSignInService({
    db, clock, users, applications, policies, mfa, passkeys, magicLinks, ssoSessions, recoveryCodes,
    throttle: loginThrottle,
    events: signInEvents,
    onBackgroundError: (error) => process.stderr.write(`latchkey: a sign-in mail could not be written: ${(error as Error)?.message ?? error}\n`),
  });
  const passwordResets = createPasswordResetsService({
    db, clock, throttles, audit, users, ssoSessions,
    outbox: mail.outbox,
    mailEnqueued: () => mail.worker.kick(),
    issuer: (customerKey) => oidc.customerIssuer(customerKey),
  });
  const oauthTokens = createOauthTokenService({ db, clock, oauthClients, ttlSeconds: config.oauthTokenTtlSeconds });
  const stepUps = createStepUps({ sealer, clock });
  const consoleAccounts = createConsoleAccounts({ db, clock, sealer, throttles });
  return {
    services: {
      audit, webhooks: webhooks.service, scimTokens: createScimTokensService({ db, clock, audit, changes }), customers, users, groups, mfa,
      userProvisioning: createUserProvisioningService({ db, users, groups }),
      groupProvisioning: createGroupProvisioningService({ db, clock, audit, groups }),
      userImport: createUserImportService({ db, users, groups, audit }), userExport: createUserExportService({ db, groups }), applications, policies, oauthClients, signingKeys, oidc, magicLinks, ssoSessions, signIn, recoveryCodes, passkeys, passwordResets, oauthTokens,
      account: createAccountService({ users, ssoSessions, throttle: loginThrottle, passkeys, stepUps }),
      accountFactors: createAccountFactorsService({ db, mfa, passkeys, applications, policies, stepUps }),
      saml,
      consoleOwners: consoleAccounts.owners, consoleSessions: consoleAccounts.sessions, consoleFirstSignIn: consoleAccounts.firstSignIn,
      consoleOwnerPasskeys: createOwnerPasskeysService({ db, passkeys }),
    },
    magicLinkPurge: magicLinkPurgeJob({
      db,
      clock,
      onError: (error) => process.stderr.write(`latchkey: magic-link purge failed: ${(error as Error).message ?? error}\n`),
    }),
    samlPurge: samlPurgeJob({
      db,
      clock,
      onError: (error) => process.stderr.write(`latchkey: SAML purge failed: ${(error as Error).message ?? error}\n`),
    }),
    webhookWorker: webhooks.worker,
    auditPurge: auditPurgeJob({
      db,
      clock,
      retentionDays: config.auditRetentionDays,
      onError: (error) => process.stderr.write(`latchkey: audit purge failed: ${(error as Error).message ?? error}\n`),
    }),
  };
}
