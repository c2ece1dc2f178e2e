/**
 * SCIM's most frequent read: the directory's probe `GET /scim/v2/Users?filter=userName eq "…"`, which Okta
 * and Entra ID send before every create and on every sync, with a SCIM bearer token, vs a ceiling serving
 * the same ListResponse.
 */
import type { Scenario } from '../harness.ts';
import { benchUsername } from '../seed.ts';

export const scimUsersFilter: Scenario = {
  name: 'scim-users-filter',
  summary: 'GET /scim/v2/Users?filter=userName eq "<user>" with a SCIM bearer token (the filter compiled to SQL, the user and its groups read) vs a ceiling serving the same ListResponse',
  async run(bench) {
    const { token } = await bench.composition.services.scimTokens.create(bench.customer.customerId, 'bench');
    const username = benchUsername(Math.ceil(bench.users / 2));
    const path = `/scim/v2/Users?${new URLSearchParams({ filter: `userName eq "${username}"` })}`;
    const headers = { authorization: `Bearer ${token}`, accept: 'application/scim+json' };

    // One by hand first: the figure means nothing unless the answer is the one user.
    const answer = await fetch(`http://127.0.0.1:${bench.server.ports.identity}${path}`, { headers });
    const list = await answer.json() as { totalResults?: number; Resources?: { userName?: string }[] };
    if (answer.status !== 200 || list.totalResults !== 1 || list.Resources?.[0]?.userName !== username) {
      throw new Error(`scim filter answered ${answer.status}: ${JSON.stringify(list).slice(0, 300)}`);
    }
    await bench.compare('SCIM Users?filter=userName eq', { face: 'identity', method: 'GET', path, headers });
  },
};
