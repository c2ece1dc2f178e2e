/**
 * The content site's services and parts: its services once (API tokens, API keys, settings, posts),
 * and, each time a site is built, the parts bound to the customer it serves (the effective settings,
 * the JWT keys, the verifiers, the token service, the API-token routes). site/app.ts mounts them.
 */
import { readFile } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import type { Config, SiteConfig, SiteMethod } from '../config.ts';
import type { Customer } from '../identity/customers/types.ts';
import type { Clock } from '../lib/clock.ts';
import { createSiteApiKeysService, type SiteApiKeysService } from '../site/api-keys/service.ts';
import { apiTokenArea } from '../site/api-tokens/mount.ts';
import { createPasswordAuthenticator } from '../site/api-tokens/password-auth.ts';
import { createPurgeScheduler, type PurgeScheduler } from '../site/api-tokens/scheduler.ts';
import { createApiTokensService, type ApiTokensService } from '../site/api-tokens/service.ts';
import type { SiteArea, SiteContext, SiteParts } from '../site/app.ts';
import { createPostsService, type PostsService } from '../site/posts/service.ts';
import { createApiTokenVerifier } from '../site/protect/api-token.ts';
import { createCapabilityResolver } from '../site/protect/capabilities.ts';
import { cacheVerifiedJwts } from '../site/protect/jwt-cache.ts';
import { loadSiteJwtKeys } from '../site/protect/jwt-keys.ts';
import { createJwtIssuer, createJwtVerifier } from '../site/protect/jwt.ts';
import type { ApiTokenVerifier, SiteUser } from '../site/protect/principal.ts';
import { createProviderVerifier, type ProviderVerifier } from '../site/protect/provider-token.ts';
import { createSiteSettingsService, type SiteSettingsService } from '../site/settings/service.ts';
import { createTokenService } from '../site/token/service.ts';
import { prepareSiteUserLookup, toSiteUser } from '../site/users.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { claimRun } from '../store/cluster-jobs.ts';
import type { Database } from '../store/schema.ts';
import { createLoginThrottle } from '../store/throttles/login.ts';
import type { ThrottleStore } from '../store/throttles/types.ts';
import type { IdentityServices } from './identity.ts';

export interface SiteServices {
  apiTokens: ApiTokensService;
  siteApiKeys: SiteApiKeysService;
  siteSettings: SiteSettingsService;
  posts: PostsService;
}

export interface SiteServicesDeps {
  config: Config;
  db: Kysely<Database>;
  clock: Clock;
  /** Undefined: no read cache (LATCHKEY_READ_CACHE=false). */
  changes: ChangeFeed | undefined;
  users: IdentityServices['users'];
  audit: IdentityServices['audit'];
}

export function composeSiteServices(deps: SiteServicesDeps): { services: SiteServices; apiTokenPurge: PurgeScheduler } {
  const { config, db, clock, changes, users, audit } = deps;
  const apiTokens = createApiTokensService({ db, clock, policy: config.site.apiTokens, users, audit, changes });
  const siteApiKeys = createSiteApiKeysService({ db, clock, users, audit, changes });
  const siteSettings = createSiteSettingsService({ db, clock });
  const posts = createPostsService({ db, clock });
  // One node of the cluster per interval (scheduler_runs claims); the purge is idempotent anyway.
  const apiTokenPurge = createPurgeScheduler({
    tokens: apiTokens,
    intervalSeconds: config.site.apiTokens.purgeIntervalSeconds,
    claim: (intervalMs) => claimRun(db, 'api-token-purge', intervalMs, clock.now()),
    onError: (error) => process.stderr.write(`latchkey: API token purge failed: ${(error as Error).message ?? error}\n`),
  });
  return { services: { apiTokens, siteApiKeys, siteSettings, posts }, apiTokenPurge };
}

/** What the server, CLI and tests may change when building the site from a composition. */
export interface SiteAppOverrides {
  /** Overrides config.site.customerKey (tests bind the site to their own customer). */
  customerKey?: string;
  /** The API-token verifier, built once the site's customer is known. */
  apiTokens?: (site: SiteContext) => ApiTokenVerifier;
  /** Route areas mounted in the protected scope, instead of the API-token routes. */
  areas?: SiteArea[];
  logStream?: { write(line: string): void };
  /** fetch used to reach the third-party provider (tests). */
  providerFetch?: typeof fetch;
  config?: Config;
}

export interface SiteDeps {
  config: Config;
  clock: Clock;
  db: Kysely<Database>;
  /** Undefined: the per-request user check reads the database every time (LATCHKEY_READ_CACHE=false). */
  changes: ChangeFeed | undefined;
  /** HS256 derives its secret from it. */
  masterKey: Buffer;
  /** Where the login throttles count (Redis when configured, else the database). */
  throttles: ThrottleStore;
  customers: Pick<IdentityServices['customers'], 'findByKey' | 'list'>;
  users: Pick<IdentityServices['users'], 'findById' | 'findByLogin' | 'findByIdWithGroups' | 'verifyCredentials' | 'recordSignIn'>;
  groups: Pick<IdentityServices['groups'], 'groupNamesByUser'>;
  /** The identity service's authenticator-app check for logins. */
  mfa: Pick<IdentityServices['mfa'], 'checkLoginOtp' | 'hasActiveAuthenticator'>;
  services: SiteServices;
}

/** The site cannot tell which customer it serves; the message says what to configure. */
export class SiteCustomerUnresolved extends Error {}

/** Where the site records the customer it bound itself to (the site settings). */
export interface SiteBinding {
  boundCustomerKey(): Promise<string | undefined>;
  bindCustomer(customerKey: string): Promise<string>;
}

/**
 * The customer the site serves: the configured key; else the one recorded when the site first
 * started with a single customer; else the only customer, which is then recorded, so that a second
 * customer created later does not change what the site serves.
 * @throws SiteCustomerUnresolved when the configured or recorded key names no customer, or when
 *   there is no customer or several and none is configured or recorded.
 */
export async function resolveSiteCustomer(
  customers: SiteDeps['customers'],
  customerKey: string | undefined,
  binding?: SiteBinding,
): Promise<Customer> {
  if (customerKey) {
    const configured = await customers.findByKey(customerKey);
    if (configured) return configured;
    throw new SiteCustomerUnresolved(`LATCHKEY_SITE_CUSTOMER_KEY=${customerKey} names no customer: create it or fix the key`);
  }
  const recorded = await binding?.boundCustomerKey();
  if (recorded) {
    const bound = await customers.findByKey(recorded);
    if (bound) return bound;
    throw new SiteCustomerUnresolved(`the content site is bound to customer key ${recorded}, which names no customer: set LATCHKEY_SITE_CUSTOMER_KEY`);
  }
  const existing = await customers.list(2);
  if (existing.length === 0) throw new SiteCustomerUnresolved('the content site needs a customer: create one with `latchkey customer create --email E`');
  if (existing.length > 1) throw new SiteCustomerUnresolved('several customers exist: set LATCHKEY_SITE_CUSTOMER_KEY to the customer key the content site serves');
  const only = existing[0];
  if (!binding) return only;
  // Two nodes starting together: the first recorded wins and both serve it.
  const winner = await binding.bindCustomer(only.customerKey);
  return winner === only.customerKey ? only : resolveSiteCustomer(customers, undefined, binding);
}

/** True when the provider settings name a way to check tokens. */
export function isProviderConfigured(provider: SiteConfig['provider']): boolean {
  return Boolean(provider.issuer || provider.introspectionUrl || provider.userinfoUrl);
}

/**
 * The parts of a site bound to the customer it serves (the configured one, the recorded one, or
 * the only one), or why there is none: the site then answers 503 with the reason.
 */
export async function composeSite(deps: SiteDeps, overrides: SiteAppOverrides = {}): Promise<SiteParts | { unavailable: string }> {
  const { clock, db, users } = deps;
  const config = overrides.config ?? deps.config;
  const { siteSettings, siteApiKeys: apiKeys, apiTokens: tokensService, posts } = deps.services;
  const { config: site, fromCli } = await siteSettings.effective(config.site);
  let customer: Customer;
  try {
    customer = await resolveSiteCustomer(deps.customers, overrides.customerKey ?? site.customerKey, siteSettings);
  } catch (error) {
    if (!(error instanceof SiteCustomerUnresolved)) throw error;
    return { unavailable: error.message };
  }
  const customerId = customer.id;
  const siteUrl = config.siteUrl;

  const keys = await loadSiteJwtKeys({
    alg: site.jwtAlg,
    masterKey: deps.masterKey,
    dataDir: config.dataDir,
    privateKeyPem: site.jwtPrivateKeyFile ? await readFile(site.jwtPrivateKeyFile, 'utf8') : undefined,
  });
  const jwtClaims = { keys, issuer: siteUrl, audience: `${siteUrl}/cms-json`, clock };
  const issuer = createJwtIssuer({ ...jwtClaims, ttlSeconds: site.jwtTtlSeconds });
  const jwt = cacheVerifiedJwts(createJwtVerifier(jwtClaims), { clock });

  const providerWanted = site.methods.includes('provider');
  const provider: ProviderVerifier | undefined = providerWanted && isProviderConfigured(site.provider)
    ? createProviderVerifier({ ...site.provider, clock, ...(overrides.providerFetch ? { fetch: overrides.providerFetch } : {}) })
    : undefined;

  const groupNamesOf = async (userId: number) => (await deps.groups.groupNamesByUser(db, customerId, [userId])).get(userId) ?? [];
  const capabilitiesOf = createCapabilityResolver({
    editorRoles: site.editorRoles,
    editorGroup: site.editorGroup,
    adminGroup: site.adminGroup,
    groupNamesOf,
  });
  const lookupUser = prepareSiteUserLookup(db, deps.changes, clock);
  const findUserById = (userId: number) => lookupUser(customerId, userId);
  const context: SiteContext = {
    config: site,
    customer,
    clock,
    siteCustomerId: async () => customerId,
    findUserById,
    async capabilities(forCustomerId, userId) {
      const user = forCustomerId === customerId ? await users.findById(customerId, userId) : undefined;
      return user ? capabilitiesOf(toSiteUser(user)) : { canRead: false, canWrite: false, isSiteAdmin: false };
    },
  };
  const siteCapabilitiesOf = (user: SiteUser) => context.capabilities(customer.id, user.id);
  const apiTokens = overrides.apiTokens
    ? overrides.apiTokens(context)
    : createApiTokenVerifier({ tokens: tokensService, siteCustomerId: context.siteCustomerId, capabilitiesOf: siteCapabilitiesOf });
  // Provider without settings, or API tokens without a verifier: off, as if not listed.
  const methods = site.methods.filter((m: SiteMethod) => (m !== 'provider' || provider) && (m !== 'apitoken' || apiTokens));

  const throttle = createLoginThrottle({ store: deps.throttles, db, clock, ...site.login });
  const tokens = createTokenService({ customerId, users, mfa: deps.mfa, issuer, throttle });
  const areas = overrides.areas ?? [apiTokenArea({
    tokens: tokensService,
    users,
    siteUrl: deps.config.siteUrl,
    password: createPasswordAuthenticator({
      users,
      capabilitiesOf: siteCapabilitiesOf,
      // Its own instance over the token endpoint's store: both count the same failures.
      throttle: createLoginThrottle({ store: deps.throttles, db, clock, ...site.login }),
      hasSecondFactor: (forCustomerId, userId) => deps.mfa.hasActiveAuthenticator(forCustomerId, userId),
    }),
  })];

  return {
    settings: site,
    fromCli,
    context,
    keys,
    providerMissing: providerWanted && !provider,
    protection: {
      methods,
      jwtHeader: site.jwtHeader,
      apiKeyHeader: site.apiKeyHeader,
      jwt,
      provider,
      apiKeys: apiKeys.verifier(customerId),
      apiTokens,
      findUserById,
      findUserByLogin: async (login) => {
        const user = await users.findByLogin(customerId, login);
        return user && toSiteUser(user);
      },
      capabilitiesOf,
    },
    tokens,
    posts,
    apiKeys,
    areas,
  };
}
