/** Issue 5's figures: GET /rest/api/2/myself with a Bearer and with a Basic API token, each vs a ceiling. */
import { SYSTEM } from '../../src/audit/context.ts';
import type { Scenario } from '../harness.ts';
import { SITE_USER, siteUserId } from './site-setup.ts';

export const apiTokensMyself: Scenario = {
  name: 'api-tokens-myself',
  summary: 'GET /rest/api/2/myself with a Bearer and a Basic API token, each vs a ceiling serving the same body',
  async run(bench) {
    const userId = await siteUserId(bench);
    const tokens = bench.composition.services.apiTokens;
    const customerId = bench.customer.customerId;
    const target = { op: '>=' as const, threshold: bench.store === 'postgres' ? 0.6 : 0.75, source: 'issue 29 (issue 5 asked 0.6)' };
    const bearer = await tokens.create(customerId, { userId, name: 'bench bearer', type: 'bearer', expiresInDays: 30 }, SYSTEM);
    await bench.compare('myself, Bearer token', bench.site('GET', '/rest/api/2/myself', { headers: { authorization: `Bearer ${bearer.secret}`, accept: 'application/json' } }), target);
    const basic = await tokens.create(customerId, { userId, name: 'bench basic', type: 'basic', expiresInDays: 30 }, SYSTEM);
    const credentials = Buffer.from(`${SITE_USER}:${basic.secret}`).toString('base64');
    await bench.compare('myself, Basic token', bench.site('GET', '/rest/api/2/myself', { headers: { authorization: `Basic ${credentials}`, accept: 'application/json' } }), target);
  },
};
