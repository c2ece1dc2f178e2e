/**
 * A composed Latchkey listening on a real port (build() from the shared helpers), and a typed
 * client signed with its customer's keys: what a user of @latchkey/client talks to.
 */
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { createLatchkeyClient, type LatchkeyClient, type LatchkeyClientOptions } from '@latchkey/client';
import { build, type TestApp } from '../helpers/app.ts';
import type { StoreKind } from '../helpers/stores.ts';

export interface ServedApp extends TestApp {
  baseUrl: string;
  /** Signed with the customer's keys. */
  client: LatchkeyClient;
  /** The customer key as the bodies carry it. */
  ck: string;
  /** Another client on this server (same keys unless overridden). */
  clientWith(options: Partial<LatchkeyClientOptions>): LatchkeyClient;
}

export async function serve(t: TestContext, kind: StoreKind): Promise<ServedApp> {
  const app = await build(t, kind);
  await app.identity.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.identity.server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  const keys = { customerKey: app.customer.customerKey, apiKey: app.customer.apiKey };
  const clientWith = (options: Partial<LatchkeyClientOptions>) => createLatchkeyClient({ baseUrl, ...keys, ...options });
  return { ...app, baseUrl, ck: app.customer.customerKey, client: clientWith({}), clientWith };
}
