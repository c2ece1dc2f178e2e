/**
 * build(t, kind): a composed Latchkey on a fresh store with a movable clock, one new customer,
 * and a client that signs admin requests the way real clients do. Closed in t.after.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { signRequest } from '../../src/identity/admin-auth.ts';
import { createTestClock, type Clock, type TestClock } from '../../src/lib/clock.ts';
import { openTestStore, type StoreKind } from './stores.ts';

export interface TestApp {
  kind: StoreKind;
  composition: Composition;
  identity: FastifyInstance;
  clock: TestClock;
  customer: CreatedCustomer;
  admin: AdminClient;
  /** Another customer with its own client, for tenancy tests. */
  newCustomer(email?: string): Promise<{ customer: CreatedCustomer; admin: AdminClient }>;
}

export interface AdminClient {
  headers(): Record<string, string>;
  post(path: string, body: unknown, options?: { headers?: Record<string, string>; query?: string }): Promise<LightMyRequestResponse>;
  get(path: string, options?: { headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
}

export function adminClient(app: FastifyInstance, customer: CreatedCustomer, clock: Clock): AdminClient {
  const headers = () => {
    const timestamp = String(clock.now());
    return {
      'customer-key': customer.customerKey,
      timestamp,
      authorization: signRequest(customer.customerKey, timestamp, customer.apiKey),
    };
  };
  return {
    headers,
    post: (path, body, options = {}) => app.inject({
      method: 'POST',
      url: `/api${path}${options.query ? `?${options.query}` : ''}`,
      headers: { 'content-type': 'application/json', ...headers(), ...options.headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    }),
    get: (path, options = {}) => app.inject({ method: 'GET', url: `/api${path}`, headers: { ...headers(), ...options.headers } }),
  };
}

export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    LATCHKEY_DATABASE_URL: ':memory:',
    LATCHKEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'latchkey-test-')),
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_LOG_LEVEL: 'silent',
    ...extra,
  };
}

/** Environment for a CLI child process and a composition sharing one SQLite file in a new data dir. */
export function fileTestEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv & { LATCHKEY_DATA_DIR: string } {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-'));
  return {
    ...process.env,
    LATCHKEY_DATA_DIR: dir,
    LATCHKEY_DATABASE_URL: join(dir, 'latchkey.sqlite'),
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_LOG_LEVEL: 'silent',
    ...extra,
  };
}

let customerCounter = 0;
const uniqueEmail = () => `owner-${process.pid}-${++customerCounter}-${randomBytes(3).toString('hex')}@example.test`;

export async function build(t: TestContext, kind: StoreKind = 'sqlite', env: Record<string, string> = {}): Promise<TestApp> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const composition = await compose(loadConfig(testEnv(env)), { clock, store });
  const identity = await composition.buildIdentityApp();
  t.after(async () => {
    await identity.close();
    await composition.close();
    if (owned) await store.close();
  });
  const customer = await composition.services.customers.create({ email: uniqueEmail() });
  return {
    kind,
    composition,
    identity,
    clock,
    customer,
    admin: adminClient(identity, customer, clock),
    async newCustomer(email = uniqueEmail()) {
      const other = await composition.services.customers.create({ email });
      return { customer: other, admin: adminClient(identity, other, clock) };
    },
  };
}
