/**
 * Issue 29's SCIM figure: the lookup a provisioning client makes before every push,
 * `GET /scim/v2/Users?filter=userName eq "<user>"` with the customer's SCIM bearer token, spread over
 * the seeded users (a different user each request), against signed users/get in interleaved slices.
 */
import { SYSTEM } from '../../src/audit/context.ts';
import type { Scenario } from '../harness.ts';
import { benchUsername } from '../seed.ts';

const USERS_PATH = '/scim/v2/Users';

/** The filtered list's path for one user (RFC 7644 §3.4.2.2: the filter in the query, URL-encoded). */
const filterPath = (username: string) => `${USERS_PATH}?filter=${encodeURIComponent(`userName eq "${username}"`)}`;

/** The filtered lookups, a different seeded user each request, with `token`. */
function filterSpec(token: string, users: number) {
  const spread = Math.min(users, 10_000);
  const headers = { authorization: `Bearer ${token}`, accept: 'application/scim+json' };
  let next = 0;
  return {
    spread,
    headers,
    spec: {
      face: 'identity' as const, method: 'GET' as const, path: filterPath(benchUsername(1)), headers,
      dynamicPath: () => filterPath(benchUsername(1 + (next++ % spread))),
    },
  };
}

export const scimUsersFilter: Scenario = {
  name: 'scim-users-filter',
  summary: 'GET /scim/v2/Users?filter=userName eq "<user>" with a SCIM bearer token, a different seeded user each request, vs signed users/get, in interleaved slices',
  async run(bench) {
    const { customerId, customerKey } = bench.customer;
    const { token } = await bench.composition.services.scimTokens.create(customerId, 'Bench SCIM client', SYSTEM);
    const { spread, headers, spec } = filterSpec(token, bench.users);

    // One by hand first: the figure means nothing unless the answer is that one user, found by the filter.
    const probe = benchUsername(Math.ceil(spread / 2));
    const first = await fetch(`http://127.0.0.1:${bench.server.ports.identity}${filterPath(probe)}`, { headers });
    const text = await first.text();
    const list = first.status === 200 ? JSON.parse(text) as { schemas?: string[]; totalResults?: number; Resources?: { userName?: string }[] } : undefined;
    if (!list?.schemas?.includes('urn:ietf:params:scim:api:messages:2.0:ListResponse') || list.totalResults !== 1
      || list.Resources?.length !== 1 || list.Resources[0]!.userName !== probe) {
      throw new Error(`scim Users filter answered ${first.status}, not a ListResponse with ${probe} alone: ${text.slice(0, 300)}`);
    }
    bench.note(`one SCIM token; filters spread over ${spread.toLocaleString('en-US')} users; the answer for one user is ${Buffer.byteLength(text).toLocaleString('en-US')} bytes`);

    const { real: scim, others: [got] } = await bench.measure('scim Users?filter=userName eq', spec, {
      others: [{ label: 'users/get (for scim filter)', spec: bench.admin('/api/admin/users/get', { customerKey, username: benchUsername(Math.ceil(bench.users / 2)) }) }],
    });
    bench.check('scim Users filter ÷ users/get', scim.requestsPerSecond / got.requestsPerSecond, 'x', { op: '>=', threshold: 0.3, source: 'issue 29 (a floor: the issue sets none)' },
      `${Math.round(scim.requestsPerSecond)} vs ${Math.round(got.requestsPerSecond)} req/s; p99 ${scim.p99Ms.toFixed(2)} vs ${got.p99Ms.toFixed(2)} ms`);
  },
  // Side by side: each server's own token, made through its admin API.
  async sideBySide(side) {
    const { token } = await side.call('/api/admin/scim-tokens/create', { customerKey: side.customer.customerKey, name: 'Bench SCIM client' }) as { token: string };
    return { label: 'scim Users?filter=userName eq', spec: filterSpec(token, side.users).spec };
  },
};
