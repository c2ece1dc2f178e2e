/**
 * The admin API's request signature (spec, Authentication): Customer-Key, Timestamp and
 * Authorization = lowercase hex SHA-512(customerKey + timestamp + apiKey). Steps in order:
 * headers present, timestamp window, customer known, digest, optional Api-Key, replay.
 * Every failure is the same Unauthenticated: nothing tells the caller which step failed.
 */
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../lib/clock.ts';
import { Unauthenticated } from '../lib/errors.ts';
import { safeEqual } from '../lib/tokens.ts';
import type { CustomersService, AuthenticatedCustomer } from './customers/service.ts';
import type { ReplayGuard } from './replay-guard.ts';

export interface AdminAuthenticator {
  /** @throws Unauthenticated on any failure. */
  authenticate(headers: IncomingHttpHeaders): Promise<AuthenticatedCustomer>;
}

const DIGITS = /^[0-9]{1,20}$/;
const HEX512 = /^[0-9a-f]{128}$/;

export function signRequest(customerKey: string, timestamp: string, apiKey: string): string {
  return hash('sha512', customerKey + timestamp + apiKey, 'hex');
}

const denied = () => new Unauthenticated('incorrect_authorization', 'admin');

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value.trim() : undefined;
}

export function createAdminAuthenticator(deps: {
  customers: CustomersService;
  clock: Clock;
  clockSkewMs: number;
  replayGuard: ReplayGuard | undefined;
}): AdminAuthenticator {
  return {
    async authenticate(headers) {
      const customerKey = single(headers['customer-key']);
      const timestamp = single(headers['timestamp']);
      const authorization = single(headers['authorization']);
      if (!customerKey || !timestamp || !authorization) throw denied();
      if (!DIGITS.test(customerKey) || !DIGITS.test(timestamp)) throw denied();

      const timestampMs = Number(timestamp);
      if (Math.abs(deps.clock.now() - timestampMs) > deps.clockSkewMs) throw denied();

      const customer = await deps.customers.findForSignature(customerKey);
      // Hash anyway for an unknown customer so the answer takes the same time.
      const expected = signRequest(customerKey, timestamp, customer?.apiKey ?? 'unknown-customer');
      const digestMatches = HEX512.test(authorization) && safeEqual(authorization, expected);
      if (!customer || !digestMatches) throw denied();

      const apiKeyHeader = headers['api-key'];
      if (apiKeyHeader !== undefined && !(typeof apiKeyHeader === 'string' && safeEqual(apiKeyHeader.trim(), customer.apiKey))) throw denied();

      if (deps.replayGuard && !(await deps.replayGuard.admit(customer.customer.id, authorization, timestampMs))) throw denied();
      return customer.customer;
    },
  };
}
