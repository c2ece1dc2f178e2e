/**
 * The Kysely `Database` interface: one type per table. Instants are epoch milliseconds (int8),
 * booleans are 0/1 integers and structured values are JSON text, so both dialects read the same.
 */
import type { Generated } from 'kysely';

export interface CustomersTable {
  id: Generated<number>;
  customer_key: string;
  email: string;
  display_name: string;
  /** AES-256-GCM sealed under the master key: the server must recompute request digests. */
  api_key_sealed: string;
  password_hash: string | null;
  /** Password expiry policy in days; null = passwords never expire. */
  password_expiry_days: number | null;
  /** The console owner's authenticator secret (sealed), and one being enrolled; null when none. */
  console_totp_sealed: Generated<string | null>;
  console_totp_pending_sealed: Generated<string | null>;
  /** The last accepted console code's time step (replay guard). */
  console_totp_last_step: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

export interface UsersTable {
  id: Generated<number>;
  customer_id: number;
  guid: string;
  username: string;
  username_norm: string;
  email: string;
  email_norm: string;
  first_name: string;
  last_name: string;
  phone: string;
  alternate_email: string;
  password_hash: string | null;
  password_changed_at: number | null;
  role: Generated<string>;
  disabled: Generated<number>;
  mark_for_deletion: Generated<number>;
  idp_enabled: Generated<number>;
  phone_verified: Generated<number>;
  email_verified: Generated<number>;
  preferred_locale: Generated<string>;
  enforce_2fa_next_login: Generated<number>;
  source_type: Generated<string>;
  source_identifier: Generated<string>;
  last_verified_at: Generated<number>;
  second_factor_type: Generated<string>;
  /** JSON object {"customAttribute1": "…", …}. */
  custom_attributes: string;
  /** Bumped by password change, disable and delete: site credentials issued earlier stop working. */
  credentials_version: Generated<number>;
  /** 1: the password was set by an administrator who asked for a change at the next sign-in. */
  password_change_required: Generated<number>;
  created_at: number;
  updated_at: number;
  /** The `externalId` the SCIM client that provisions the user keeps (src/scim/); null when none set it. */
  scim_external_id: Generated<string | null>;
}

/** Each user's last sign-in (the site's token endpoint, a magic link), written at most once a minute. */
export interface UserSignInsTable {
  user_id: number;
  customer_id: number;
  signed_in_at: number;
}

/** Live users per block of 1024 user ids: turns a deep batch into a short scan (see users/repo.ts). */
export interface UserIdBucketsTable {
  customer_id: number;
  bucket: number;
  user_count: number;
}

export interface GroupsTable {
  id: Generated<number>;
  customer_id: number;
  name: string;
  name_norm: string;
  is_default: number;
  /** The group created with the customer; its listing carries no dates. */
  is_customer_default: number;
  /** JSON object {"groupAttribute1": "…", …}. */
  attributes: string;
  created_at: number;
  updated_at: number;
  /** The `externalId` the SCIM client that provisions the group keeps (src/scim/); null when none set it. */
  scim_external_id: Generated<string | null>;
}

export interface GroupMembersTable {
  id: Generated<number>;
  customer_id: number;
  group_id: number;
  user_id: number;
  /** JSON array [{"name": "…", "value": "…"}] from the user's group object. */
  attributes: string;
  created_at: number;
  updated_at: number;
}

/** A user's authenticator app: the pending registration and the active secret (RFC 6238), sealed. */
export interface MfaAuthenticatorsTable {
  user_id: number;
  customer_id: number;
  /** AES-256-GCM sealed (aad binds customer and user); null when no registration is pending. */
  pending_secret_sealed: string | null;
  pending_created_at: number | null;
  /** Failed validations of the pending registration; 5 lock it until a new registration. */
  failed_attempts: Generated<number>;
  active_secret_sealed: string | null;
  activated_at: number | null;
  /** The last accepted TOTP time step of the active secret; a code is accepted only for a later step. */
  last_step: Generated<number>;
  created_at: number;
  updated_at: number;
}

export interface Database {
  customers: CustomersTable;
  users: UsersTable;
  user_sign_ins: UserSignInsTable;
  user_id_buckets: UserIdBucketsTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  mfa_authenticators: MfaAuthenticatorsTable;
  site_posts: SitePostsTable;
  site_api_keys: SiteApiKeysTable;
  site_login_failures: SiteLoginFailuresTable;
  site_settings: SiteSettingsTable;
  api_tokens: ApiTokensTable;
  api_token_quotas: ApiTokenQuotasTable;
  mail_outbox: MailOutboxTable;
  applications: ApplicationsTable;
  login_policies: LoginPoliciesTable;
  oauth_clients: OauthClientsTable;
  customer_signing_keys: CustomerSigningKeysTable;
  oidc_models: OidcModelsTable;
  magic_links: MagicLinksTable;
  magic_link_pending_logins: MagicLinkPendingLoginsTable;
  oauth_access_tokens: OauthAccessTokensTable;
  admin_replay_guard: AdminReplayGuardTable;
  scheduler_runs: SchedulerRunsTable;
  console_sessions: ConsoleSessionsTable;
  console_first_sign_ins: ConsoleFirstSignInsTable;
  sso_sessions: SsoSessionsTable;
  sign_in_flows: SignInFlowsTable;
  recovery_codes: RecoveryCodesTable;
  password_resets: PasswordResetsTable;
  saml_request_ids: SamlRequestIdsTable;
  saml_requests: SamlRequestsTable;
  passkeys: PasskeysTable;
  passkey_ceremonies: PasskeyCeremoniesTable;
  audit_events: AuditEventsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  scim_tokens: ScimTokensTable;
}

/** Site API tokens (Basic or Bearer); the secret is stored only as its SHA-256. */
export interface ApiTokensTable {
  id: Generated<number>;
  customer_id: number;
  user_id: number;
  name: string;
  /** 'basic' | 'bearer' */
  type: string;
  token_hash: string;
  created_at: number;
  /** null = never expires (only when the policy allows it). */
  expires_at: number | null;
  last_used_at: number | null;
}

/** Per-user row written first by every token create: serialises creates of one user (max per user). */
export interface ApiTokenQuotasTable {
  user_id: number;
  customer_id: number;
  updated_at: number;
}

/** Mails waiting to be sent, or sent (src/mail/outbox.ts); claimed by one worker at a time. */
export interface MailOutboxTable {
  id: Generated<number>;
  customer_id: number;
  /** A template name of src/mail/templates.ts, e.g. 'magic-link-invite'. */
  template: string;
  to_address: string;
  /** The template's parameters as JSON, sealed under the master key (aad: message_id); null once sent. */
  sealed_data: string | null;
  /** '<uuid@domain>', fixed at enqueue. */
  message_id: string;
  /** 'pending' | 'sent' | 'failed' */
  status: string;
  attempts: Generated<number>;
  next_attempt_at: number;
  claimed_by: string | null;
  /** The claim's lease: after it, another worker may take the row. */
  claimed_until: number | null;
  /** The last failure's reason (never the link nor the sealed data). */
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}

/** The content site's posts (site-wide, not per customer). */
export interface SitePostsTable {
  id: Generated<number>;
  slug: string;
  /** 'publish' | 'draft' */
  status: string;
  type: Generated<string>;
  title: string;
  /** HTML. */
  content: string;
  /** The user who wrote it; 0 for seeded posts. */
  author_id: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** Site API keys: the default read-only key (user_id null) and user keys; stored as SHA-256 only. */
export interface SiteApiKeysTable {
  id: Generated<number>;
  customer_id: number;
  user_id: number | null;
  name: Generated<string>;
  key_hash: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

/** Failed token-endpoint logins per username or client address, shared by every node. */
export interface SiteLoginFailuresTable {
  key: string;
  failures: number;
  last_failure_at: number;
  /** Epoch ms before which this key's logins are refused with 429; 0 when not blocked. */
  blocked_until: Generated<number>;
}

/** Site settings set with `latchkey site config set`; they override the environment. */
export interface SiteSettingsTable {
  name: string;
  /** JSON. */
  value: string;
  updated_at: number;
}

/** Applications users sign in to with a magic link; URLs are JSON text arrays. */
export interface ApplicationsTable {
  id: Generated<number>;
  customer_id: number;
  uuid: string;
  name: string;
  /** 'JWT' | 'OAUTH' | 'SAML' */
  type: string;
  return_urls: string;
  redirect_uris: string;
  login_urls: string;
  /** OAUTH: where RP-initiated logout may send the browser back (migration 0023). */
  post_logout_redirect_uris: string;
  /** OAUTH only: the client secret is derived from the master key and this salt, never stored. */
  client_secret_salt: string | null;
  /** OAUTH only: SHA-256 hex of the derived client secret. */
  client_secret_hash: string | null;
  created_at: number;
  /** SAML only (migration 0024): the service provider's entity ID, unique per customer. */
  saml_entity_id: string | null;
  /** SAML: the assertion consumer service URLs, a JSON text array ('[]' for the other types). */
  acs_urls: Generated<string>;
  /** SAML: 'emailAddress' | 'persistent' | 'unspecified'. */
  name_id_format: string | null;
  slo_url: string | null;
  /** SAML: the PEM certificate the SP signs its requests with. */
  sp_certificate: string | null;
}

/** Which factors sign a user in to an application: per group, or application-wide. */
export interface LoginPoliciesTable {
  id: Generated<number>;
  customer_id: number;
  application_id: number;
  /** 'MAGIC_LINK' | 'PASSWORD' | 'PASSKEY' */
  first_factor: string;
  /** 'NONE' | 'AUTHENTICATOR_APP' | 'PASSKEY' | 'ANY' */
  second_factor: string;
  /** null for the application-wide policy. */
  group_name: string | null;
  /** Trimmed lower-case group name, '' for the application-wide policy (unique per application). */
  group_name_norm: string;
  created_at: number;
}

/** OAuth 2.0 clients (client credentials grant); the secret is stored only as its SHA-256. */
export interface OauthClientsTable {
  id: Generated<number>;
  customer_id: number;
  client_id: string;
  name: string;
  secret_hash: string;
  created_at: number;
}

/** One RS256 key pair per customer, created on first use; the private JWK is sealed under the master key. */
export interface CustomerSigningKeysTable {
  id: Generated<number>;
  customer_id: number;
  /** RFC 7638 thumbprint of the public JWK. */
  kid: string;
  alg: string;
  /** The public JWK as JSON. */
  public_jwk: string;
  /** AES-256-GCM sealed private JWK (aad: customer id and kid). */
  private_jwk_sealed: string;
  created_at: number;
}

/** The customers' OpenID providers' state (oidc-provider models), shared by every node. */
export interface OidcModelsTable {
  customer_id: number;
  /** oidc-provider's model name: 'Session', 'Interaction', 'AuthorizationCode', 'Grant', … */
  kind: string;
  id: string;
  /** The model's payload as JSON. */
  payload: string;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  /** Epoch ms; null = no expiry. */
  expires_at: number | null;
  consumed_at: number | null;
}

/** INVITE magic links; the token is never stored, only its SHA-256 (hex). */
export interface MagicLinksTable {
  id: Generated<number>;
  customer_id: number;
  user_id: number;
  application_id: number;
  /** 'INVITE' | 'LOGIN' (the hosted sign-in's mail) */
  type: string;
  token_hash: string;
  redirect_uri: string | null;
  expires_at: number;
  created_at: number;
  consumed_at: number | null;
  revoked_at: number | null;
  /** The generate request's correlationId (support and audit). */
  correlation_id: string;
}

/** A consumed link waiting for its authenticator code; the browser's cookie holds the id, stored as SHA-256. */
export interface MagicLinkPendingLoginsTable {
  id_hash: string;
  link_id: number;
  customer_id: number;
  /** Codes tried (reserved before each check). */
  attempts: Generated<number>;
  expires_at: number;
}

/** Access tokens of POST /oauth/token (client credentials), stored as SHA-256 only. */
export interface OauthAccessTokensTable {
  id: Generated<number>;
  token_hash: string;
  customer_id: number;
  /** oauth_clients.id */
  client_id: number;
  scope: string;
  expires_at: number;
  created_at: number;
}

/** The owner's one-time sign-in links (first start); the link holds the token, the table only its SHA-256. */
export interface ConsoleFirstSignInsTable {
  token_hash: string;
  customer_id: number;
  created_at: number;
  expires_at: number;
  /** Set once, by the request that used the link. */
  used_at: number | null;
}

/** Admin console sessions; the cookie holds the value, the table only its SHA-256. */
export interface ConsoleSessionsTable {
  id_hash: string;
  customer_id: number;
  stage: 'code' | 'active';
  attempts: Generated<number>;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

/** Signed admin header triples seen within the timestamp window (identity/replay-guard.ts); UNLOGGED on PostgreSQL. */
export interface AdminReplayGuardTable {
  /** The first 32 hex characters (128 bits) of the SHA-512 digest. */
  digest_prefix: string;
  first_seen: number;
  /** When the triple's timestamp leaves the window: deleted from then on, in batches. */
  expires_at: number;
}

/** One row per periodic job: the node whose claim moved next_run_at runs it (store/cluster-jobs.ts). */
export interface SchedulerRunsTable {
  name: string;
  next_run_at: number;
  last_run_at: number;
  last_node: string;
  runs: number;
}

/** End users' SSO sessions (identity/sso-sessions): the cookie value only as its SHA-256. */
export interface SsoSessionsTable {
  id: Generated<number>;
  id_hash: string;
  customer_id: number;
  user_id: number;
  credentials_version: number;
  /** JSON array of RFC 8176 method values: 'pwd', 'otp', 'hwk', 'email'. */
  amr: string;
  user_agent: string;
  address: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

/** A user's unused recovery codes, one per slot 0..9, as HMAC-SHA256 under a key derived from the master key. */
export interface RecoveryCodesTable {
  id: Generated<number>;
  customer_id: number;
  user_id: number;
  slot: number;
  code_hash: string;
  created_at: number;
}

/** Forgotten-password links: the token's SHA-256, 30 minutes, used once. */
export interface PasswordResetsTable {
  id: Generated<number>;
  token_hash: string;
  customer_id: number;
  user_id: number;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** Hosted sign-in flows (identity/sign-in): the id and the browser's cookie value only as SHA-256. */
export interface SignInFlowsTable {
  id_hash: string;
  customer_id: number;
  application_id: number;
  application_uuid: string;
  return_to: string;
  browser_hash: string;
  user_id: number | null;
  login: string | null;
  /** identify | password | magic | passkey | second | enrol | codes | new-password */
  step: string;
  /** JSON array of RFC 8176 values. */
  amr: string;
  link_id: number | null;
  code_hash: string | null;
  code_attempts: Generated<number>;
  created_at: number;
  expires_at: number;
}

/** AuthnRequest IDs answered, per customer, until the request would be too old anyway. */
export interface SamlRequestIdsTable {
  customer_id: number;
  request_id: string;
  expires_at: number;
}

/** A checked SAML request waiting for its browser to sign in; the id only as its SHA-256. */
export interface SamlRequestsTable {
  id_hash: string;
  customer_id: number;
  application_id: number;
  application_uuid: string;
  browser_hash: string;
  acs_url: string;
  request_id: string | null;
  relay_state: string | null;
  force_authn_after: string | null;
  /** 0 | 1 */
  is_passive: Generated<number>;
  expires_at: number;
}

/** WebAuthn credentials (identity/passkeys): public keys only. user_id null: the customer's console owner. */
export interface PasskeysTable {
  id: Generated<number>;
  customer_id: number;
  user_id: number | null;
  /** base64url, as the authenticator gave it. */
  credential_id: string;
  /** base64url of the COSE public key. */
  public_key: string;
  counter: number;
  /** JSON array of AuthenticatorTransport values. */
  transports: string;
  /** 'singleDevice' | 'multiDevice' */
  device_type: string;
  /** 1 when the authenticator says the credential is backed up (synced). */
  backed_up: number;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** Issued WebAuthn challenges: the ceremony id only as SHA-256, taken once, 5 minutes. */
export interface PasskeyCeremoniesTable {
  id: Generated<number>;
  id_hash: string;
  customer_id: number;
  user_id: number | null;
  /** 'user' | 'owner' | 'any' (username-less: nobody named) */
  holder_kind: string;
  /** 'register' | 'authenticate' */
  purpose: string;
  /** base64url */
  challenge: string;
  expires_at: number;
}

/** One audit event (src/audit); `id` only grows and is the read cursor. Never updated, deleted only by the retention purge. */
export interface AuditEventsTable {
  id: Generated<number>;
  customer_id: number;
  event_id: string;
  time: number;
  action: string;
  actor_type: string;
  actor_id: string;
  target_type: string;
  target_id: string;
  target_name: string;
  ip: string;
  request_id: string;
  correlation_id: string;
}

/** A customer's webhook endpoints (src/webhooks/). */
export interface WebhooksTable {
  id: Generated<number>;
  customer_id: number;
  /** Public id, `wh_…`. */
  webhook_id: string;
  url: string;
  /** JSON array of action prefixes; ["*"] for every event. */
  events: string;
  /** The signing secret (`whsec_…`), sealed under the master key (aad: webhook_id). */
  sealed_secret: string;
  /** 1, or 0 once a delivery was answered 410 Gone. */
  enabled: number;
  disabled_at: number | null;
  created_at: number;
}

/** One audit event to one endpoint (src/webhooks/): an outbox row claimed by one worker at a time. */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  customer_id: number;
  /** webhooks.id */
  webhook_id: number;
  /** `msg_…`: the webhook-id header, the same on every attempt. */
  message_id: string;
  /** The audit event as JSON. */
  event: string;
  /** 'pending' | 'delivered' | 'failed' | 'disabled' */
  status: string;
  attempts: Generated<number>;
  next_attempt_at: number;
  claimed_by: string | null;
  claimed_until: number | null;
  /** The last answer's HTTP status; null when none came. */
  last_status: number | null;
  /** The last answer's body, its first 1 KB. */
  last_answer: string | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/** A customer's SCIM bearer tokens (src/scim/tokens/); the token itself is stored only as its SHA-256. */
export interface ScimTokensTable {
  id: Generated<number>;
  customer_id: number;
  /** Public id, `st_…`. */
  token_id: string;
  name: string;
  token_hash: string;
  created_at: number;
  /** Written at most once a minute per token. */
  last_used_at: number | null;
}
