/** Issue 5's figures: GET /rest/api/2/myself with a Bearer and with a Basic API token, each vs a ceiling. */
import { SYSTEM } from '../../src/audit/context.ts';
import type { Scenario } from '../harness.ts';
import { SITE_USER, siteCredential, siteSide, siteUserId } from './site-setup.ts';

const MYSELF_PATH = '/rest/api/2/myself';
const TOKENS_PATH = '/rest/api/2/tokens';

export const apiTokensMyself: Scenario = {
  name: 'api-tokens-myself',
  summary: 'GET /rest/api/2/myself with a Bearer and a Basic API token, each vs a ceiling serving the same body',
  async run(bench) {
    const userId = await siteUserId(bench);
    const tokens = bench.composition.services.apiTokens;
    const customerId = bench.customer.customerId;
    const target = { op: '>=' as const, threshold: bench.store === 'postgres' ? 0.6 : 0.75, source: 'issue 29 (issue 5 asked 0.6)' };
    const bearer = await tokens.create(customerId, { userId, name: 'bench bearer', type: 'bearer', expiresInDays: 30 }, SYSTEM);
    await bench.compare('myself, Bearer token', bench.site('GET', MYSELF_PATH, { headers: { authorization: `Bearer ${bearer.secret}`, accept: 'application/json' } }), target);
    const basic = await tokens.create(customerId, { userId, name: 'bench basic', type: 'basic', expiresInDays: 30 }, SYSTEM);
    const credentials = Buffer.from(`${SITE_USER}:${basic.secret}`).toString('base64');
    await bench.compare('myself, Basic token', bench.site('GET', MYSELF_PATH, { headers: { authorization: `Basic ${credentials}`, accept: 'application/json' } }), target);
  },
  // Side by side: each server's own user and tokens, made through its wire.
  async sideBySide(side) {
    const { hs256 } = await siteSide(side, 0);
    const token = (type: string) => siteCredential(side, hs256, TOKENS_PATH, { name: `bench ${type}`, type, expiresInDays: 30 }, 'token');
    const bearer = await token('bearer');
    const basic = Buffer.from(`${SITE_USER}:${await token('basic')}`).toString('base64');
    return [
      { label: 'myself, Bearer token', spec: side.site('GET', MYSELF_PATH, { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' } }) },
      { label: 'myself, Basic token', spec: side.site('GET', MYSELF_PATH, { headers: { authorization: `Basic ${basic}`, accept: 'application/json' } }) },
    ];
  },
};
