/**
 * The customers' OpenID providers: issuer `{publicUrl}/customers/<customerKey>`, one oidc-provider
 * instance per customer, created on first use and kept (bounded), and the entry point of the
 * magic-link landing (beginProviderLogin).
 */
import type { FastifyReply } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import type { Database } from '../../store/schema.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { Customer } from '../customers/types.ts';
import type { SigningKeysService } from '../signing-keys/service.ts';
import type { SsoSessionsService } from '../sso-sessions/service.ts';
import type { UsersService } from '../users/service.ts';
import { createCustomerProvider, type OidcProvider } from './provider.ts';
import * as repo from './repo.ts';

export interface ProviderLogin {
  customerId: number;
  userId: number;
  /** The OAUTH application (the provider's client_id) the user signed in to. */
  applicationUuid: string;
  /** ['email'], plus 'otp' after a second factor. */
  amr: string[];
}

export interface CustomerProvider {
  customer: Customer;
  issuer: string;
  /** The issuer's path on this server, e.g. /customers/123 (with the public URL's own path first). */
  issuerPath: string;
  provider: OidcProvider;
}

export interface OidcService {
  customerIssuer(customerKey: string): string;
  /**
   * After the magic-link landing signed the user in to an OAUTH application: stores a single-use
   * login ticket (5 minutes) and adds its cookie to `reply` (HttpOnly, SameSite=Lax, Secure on an
   * https public URL, scoped to the provider's interaction path). The application's next
   * authorization request then completes without asking the user again.
   * @throws Error when the customer does not exist.
   */
  beginProviderLogin(reply: FastifyReply, login: ProviderLogin): Promise<void>;
  /** The customer's provider, or undefined for an unknown customer key. */
  providerFor(customerKey: string): Promise<CustomerProvider | undefined>;
  /** Consumes the login ticket behind a cookie value, for this customer and application. */
  consumeTicket(customerId: number, value: string, applicationUuid: string): Promise<repo.LoginTicket | undefined>;
  users: UsersService;
}

export interface OidcDeps {
  db: Kysely<Database>;
  clock: Clock;
  publicUrl: string;
  masterKey: Buffer;
  customers: { findByKey(customerKey: string): Promise<Customer | undefined> };
  users: UsersService;
  applications: ApplicationsService;
  signingKeys: SigningKeysService;
  /** RP-initiated logout ends the customer's SSO session too. */
  ssoSessions: Pick<SsoSessionsService, 'end' | 'clearCookie'>;
  /** The SSO session check of the login prompt (provider.ts). */
  loginSatisfied?: (customerId: number, applicationUuid: string, accountId: string, ssoValue: string | undefined) => Promise<boolean>;
}

/** Providers kept per node; each is a small Koa app. Least recently used goes first. */
const MAX_PROVIDERS = 200;

export function customerIssuer(publicUrl: string, customerKey: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/customers/${customerKey}`;
}

export function createOidcService(deps: OidcDeps): OidcService {
  const { db, clock, publicUrl } = deps;
  const secure = new URL(publicUrl).protocol === 'https:';
  const providers = new Map<string, Promise<OidcProvider>>();

  function cachedProvider(customer: Customer, issuer: string): Promise<OidcProvider> {
    // Keyed by id and key: a customer key is never reused, but be exact.
    const cacheKey = `${customer.id}:${customer.customerKey}`;
    let entry = providers.get(cacheKey);
    if (entry) {
      providers.delete(cacheKey);
    } else {
      if (providers.size >= MAX_PROVIDERS) providers.delete(providers.keys().next().value!);
      entry = createCustomerProvider(deps, { id: customer.id, issuer });
      entry.catch(() => { if (providers.get(cacheKey) === entry) providers.delete(cacheKey); });
    }
    providers.set(cacheKey, entry);
    return entry;
  }

  return {
    customerIssuer: (customerKey) => customerIssuer(publicUrl, customerKey),

    async providerFor(customerKey) {
      if (!/^[0-9]{1,20}$/.test(customerKey)) return undefined;
      // Cached at most a second by the customers service: a deleted customer's provider stops answering.
      const customer = await deps.customers.findByKey(customerKey);
      if (!customer) return undefined;
      const issuer = customerIssuer(publicUrl, customer.customerKey);
      return { customer, issuer, issuerPath: new URL(issuer).pathname, provider: await cachedProvider(customer, issuer) };
    },

    async beginProviderLogin(reply, login) {
      const customerKey = await repo.findCustomerKey(db, login.customerId);
      if (customerKey === undefined) throw new Error(`no customer ${login.customerId}`);
      const value = await repo.issueTicket(db, login.customerId, {
        userId: login.userId,
        applicationUuid: login.applicationUuid.toLowerCase(),
        amr: login.amr,
      }, clock.now());
      const path = `${new URL(customerIssuer(publicUrl, customerKey)).pathname}/interaction`;
      reply.header('set-cookie', `${repo.TICKET_COOKIE}=${value}; Path=${path}; Max-Age=${repo.TICKET_TTL_SECONDS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`);
    },

    consumeTicket: (customerId, value, applicationUuid) => repo.consumeTicket(db, customerId, value, applicationUuid, clock.now()),

    users: deps.users,
  };
}
