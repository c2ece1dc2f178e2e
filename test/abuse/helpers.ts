/**
 * Shared set-up of the abuse suites: a composed Latchkey (identity face, and the content site on
 * request) on one store, with every JSON log line of both faces captured, and shortcuts for a user
 * who can receive magic links.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SYSTEM } from '../../src/audit/context.ts';
import { compose, type Composition } from '../../src/compose/index.ts';
import { loadConfig } from '../../src/config.ts';
import type { CreatedCustomer } from '../../src/identity/customers/service.ts';
import { createTestClock, type TestClock } from '../../src/lib/clock.ts';
import { adminClient, testEnv, type AdminClient } from '../helpers/app.ts';
import { openTestStore, type StoreKind } from '../helpers/stores.ts';

export const PUBLIC_URL = 'http://id.example.test';
export const RETURN_URL = 'https://app.example.test/sso/return';
export const PASSWORD = 'violet-otter-harbour-42';

export interface AbuseEnv {
  composition: Composition;
  identity: FastifyInstance;
  clock: TestClock;
  customer: CreatedCustomer;
  admin: AdminClient;
  /** Every log line written by the faces built through this env. */
  logs: string[];
  site(): Promise<FastifyInstance>;
  addUser(username: string, options?: { password?: string; groups?: string[] }): Promise<{ id: number; username: string; email: string }>;
  /** A JWT application with a MAGIC_LINK policy (second factor as given). */
  magicApp(secondFactor?: 'NONE' | 'AUTHENTICATOR_APP'): Promise<string>;
}

export async function setup(t: TestContext, kind: StoreKind, env: Record<string, string> = {}): Promise<AbuseEnv> {
  const clock = createTestClock(Date.now());
  const { store, owned } = await openTestStore(kind);
  const logs: string[] = [];
  const logStream = { write: (line: string) => { logs.push(line); } };
  const composition = await compose(
    loadConfig(testEnv({ LATCHKEY_PUBLIC_URL: PUBLIC_URL, LATCHKEY_LOG_LEVEL: 'info', ...env })),
    { clock, store, logStream },
  );
  const identity = await composition.buildIdentityApp();
  const closers: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const close of closers) await close();
    await identity.close();
    await composition.close();
    if (owned) await store.close();
  });
  const customer = await composition.services.customers.create({ email: `owner-${randomBytes(5).toString('hex')}@example.test` });
  const { services } = composition;
  return {
    composition, identity, clock, customer, logs,
    admin: adminClient(identity, customer, clock),
    async site() {
      const site = await composition.buildSiteApp({ customerKey: customer.customerKey, logStream });
      closers.push(() => site.close());
      return site;
    },
    async addUser(username, options = {}) {
      const email = `${username}@example.test`;
      const groups = options.groups ?? [];
      if (groups.length) await services.groups.upsert(customer.customerId, groups.map((name) => ({ name, isDefault: false, attributes: {} })), SYSTEM);
      const user = await services.users.create(customer.customerId, {
        username, email, firstName: 'Abuse', lastName: 'Target', password: options.password ?? PASSWORD, customAttributes: {},
        ...(groups.length ? { groups: groups.map((name) => ({ name, attributes: [] })) } : {}),
      }, SYSTEM);
      return { id: user.id, username, email };
    },
    async magicApp(secondFactor = 'NONE') {
      const { application } = await services.applications.create(customer.customerId, { name: 'Portal', type: 'JWT', returnUrls: [RETURN_URL] }, SYSTEM);
      await services.policies.create(customer.customerId, { applicationUuid: application.uuid, firstFactor: 'MAGIC_LINK', secondFactor }, SYSTEM);
      return application.uuid;
    },
  };
}

export const concurrently = <T>(n: number, make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));
