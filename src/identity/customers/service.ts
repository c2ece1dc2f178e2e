/**
 * Customer accounts: creation (with the default group), lookup for the request signature, and the
 * API key, which is sealed at rest because the server must recompute every request's digest.
 */
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { newCustomerKey } from '../../lib/ids.ts';
import { checkPasswordRule, hashPassword } from '../../lib/passwords.ts';
import type { Sealer } from '../../lib/seal.ts';
import { generateSecret } from '../../lib/tokens.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { customerTarget } from '../../audit/targets.ts';
import type { Customer, CustomerWithApiKey } from './types.ts';

export type AuthenticatedCustomer = Customer;

export interface CreatedCustomer { customerId: number; customerKey: string; apiKey: string }

export interface CustomersService {
  /** @throws Invalid for a bad e-mail or password; Conflict when the e-mail is taken. */
  create(input: { email: string; password?: string; displayName?: string }): Promise<CreatedCustomer>;
  /** The customer and its opened API key, cached briefly per node. */
  findForSignature(customerKey: string): Promise<CustomerWithApiKey | undefined>;
  findByKey(customerKey: string): Promise<Customer | undefined>;
  /** The customer the content site serves: the configured key, else the only customer. */
  findSiteCustomer(configuredKey: string | undefined): Promise<Customer | undefined>;
  /** Replaces the API key; the old one stops working once node caches expire. */
  rotateApiKey(customerKey: string, context: AuditContext): Promise<string>;
  setPasswordExpiryDays(customerKey: string, days: number | null): Promise<void>;
  list(limit?: number): Promise<Customer[]>;
  /**
   * False when a sealed API key in the database does not open under this node's master key: the
   * node was started without the key of the node that created the database.
   */
  opensSealedKeys(): Promise<boolean>;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/**
 * The longest a node keeps a customer and its API key, whatever cacheMs asks: this cache is not told
 * of changes made on other nodes, and an API key rotated there must stop working here within 2 s
 * (issue 13). Counted on the service's clock (real time in production; tests move theirs).
 */
export const MAX_CUSTOMER_CACHE_MS = 1000;

const strip = ({ apiKeySealed: _sealed, ...customer }: repo.CustomerRow): Customer => customer;

export function createCustomersService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  sealer: Sealer;
  /** How long a node keeps a customer for signature checks; at most MAX_CUSTOMER_CACHE_MS. */
  cacheMs: number;
  createDefaultGroup: (trx: Executor, customerId: number) => Promise<void>;
  /** A rotation records customer.apikey.rotated (never the key). */
  audit: AuditRecorder;
}): CustomersService {
  const cache = new Map<string, { value: CustomerWithApiKey | undefined; readAt: number }>();
  const cacheMs = Math.min(deps.cacheMs, MAX_CUSTOMER_CACHE_MS);
  const aad = (customerKey: string) => `customer-api-key:${customerKey}`;

  async function create(input: { email: string; password?: string; displayName?: string }): Promise<CreatedCustomer> {
    const email = input.email.trim();
    if (!EMAIL.test(email)) throw new Invalid('email', 'must be an e-mail address');
    if (input.password !== undefined) checkPasswordRule(input.password);
    const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null;
    const apiKey = generateSecret('lkak', 32);
    for (let attempt = 0; ; attempt++) {
      const customerKey = newCustomerKey();
      try {
        const customerId = await deps.db.transaction().execute(async (trx) => {
          const id = await repo.insertCustomer(trx, {
            customerKey,
            email: email.toLowerCase(),
            displayName: input.displayName?.trim() || email.split('@')[1] || 'Latchkey',
            apiKeySealed: deps.sealer.seal(apiKey, aad(customerKey)),
            passwordHash,
            now: deps.clock.now(),
          });
          await deps.createDefaultGroup(trx, id);
          return id;
        });
        return { customerId, customerKey, apiKey };
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        const existing = await deps.db.selectFrom('customers').select('id').where('email', '=', email.toLowerCase()).executeTakeFirst();
        if (existing) throw new Conflict('customer_exists', { field: 'email' }, 'a customer with this email already exists');
        if (attempt >= 3) throw error;
      }
    }
  }

  async function findForSignature(customerKey: string): Promise<CustomerWithApiKey | undefined> {
    const now = deps.clock.now();
    const hit = cache.get(customerKey);
    // A negative age is a clock set back (wall time): read again rather than keep it for the step.
    if (hit && now - hit.readAt >= 0 && now - hit.readAt < cacheMs) return hit.value;
    const row = await repo.findCustomerByKey(deps.db, customerKey);
    const value = row && { customer: strip(row), apiKey: deps.sealer.open(row.apiKeySealed, aad(row.customerKey)) };
    if (cacheMs > 0) {
      if (cache.size > 10_000) cache.clear();
      cache.set(customerKey, { value, readAt: now });
    }
    return value;
  }

  return {
    create,
    findForSignature,
    async findByKey(customerKey) {
      const row = await repo.findCustomerByKey(deps.db, customerKey);
      return row && strip(row);
    },
    async findSiteCustomer(configuredKey) {
      if (configuredKey) return (await findForSignature(configuredKey))?.customer;
      const rows = await repo.listCustomers(deps.db, 2);
      return rows.length === 1 ? strip(rows[0]) : undefined;
    },
    async rotateApiKey(customerKey, context) {
      const row = await repo.findCustomerByKey(deps.db, customerKey);
      if (!row) throw new NotFound('customer');
      const apiKey = generateSecret('lkak', 32);
      await deps.db.transaction().execute(async (trx) => {
        await repo.updateCustomerSettings(trx, row.id, { apiKeySealed: deps.sealer.seal(apiKey, aad(customerKey)), now: deps.clock.now() });
        await deps.audit.record(trx, row.id, { action: 'customer.apikey.rotated', target: customerTarget(row) }, context);
      });
      cache.delete(customerKey);
      return apiKey;
    },
    async setPasswordExpiryDays(customerKey, days) {
      const row = await repo.findCustomerByKey(deps.db, customerKey);
      if (!row) throw new NotFound('customer');
      if (days !== null && (!Number.isInteger(days) || days < 1 || days > 3650)) throw new Invalid('days', 'must be 1..3650');
      await repo.updateCustomerSettings(deps.db, row.id, { passwordExpiryDays: days, now: deps.clock.now() });
      cache.delete(customerKey);
    },
    async list(limit = 100) {
      return (await repo.listCustomers(deps.db, limit)).map(strip);
    },
    async opensSealedKeys() {
      const [first] = await repo.listCustomers(deps.db, 1);
      if (!first) return true;
      try {
        deps.sealer.open(first.apiKeySealed, aad(first.customerKey));
        return true;
      } catch {
        return false;
      }
    },
  };
}
