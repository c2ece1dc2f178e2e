/** `scim-token …`: create, list and delete SCIM bearer tokens (the admin routes /admin/scim-tokens/*). */
import { toWireScimToken } from '../../scim/tokens/routes.ts';
import { stringFlag } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

const CUSTOMER_KEY = 'the numeric customer key (customer list shows it)';
const when = (ms: number | null) => (ms === null ? 'never used' : new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + 'Z');

export const scimTokenCreate: Command = {
  name: 'scim-token create',
  usage: 'scim-token create --customer-key K --name N [--json]',
  summary: 'Create a SCIM bearer token for Okta or Entra ID; prints the token once.',
  options: { 'customer-key': CUSTOMER_KEY, 'name': 'what the token is for, e.g. "Okta"' },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const { scimToken, token } = await app.services.scimTokens.create(customerId, stringFlag(args, 'name', true), auditContext);
    return {
      json: { tokenId: scimToken.tokenId, token },
      text: `SCIM token "${scimToken.name}" created.\n  Token ID: ${scimToken.tokenId}\n  Token:    ${token}\nThe token is not shown again.`,
    };
  },
};

export const scimTokenList: Command = {
  name: 'scim-token list',
  usage: 'scim-token list --customer-key K [--json]',
  summary: "List a customer's SCIM tokens (never the tokens themselves).",
  options: { 'customer-key': CUSTOMER_KEY },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const tokens = (await app.services.scimTokens.list(customerId)).map(toWireScimToken);
    return {
      json: tokens,
      text: tokens.map((t) => [t.tokenId, t.name, `created ${when(t.createdDttm)}`, t.lastUsedDttm === null ? 'never used' : `last used ${when(t.lastUsedDttm)}`].join('\t')).join('\n') || 'No SCIM tokens.',
    };
  },
};

export const scimTokenDelete: Command = {
  name: 'scim-token delete',
  usage: 'scim-token delete --customer-key K --token-id ID [--json]',
  summary: 'Delete a SCIM token: requests carrying it are refused from now on.',
  options: { 'customer-key': CUSTOMER_KEY, 'token-id': "the token's id (st_…), as create or list shows it" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const tokenId = stringFlag(args, 'token-id', true);
    await app.services.scimTokens.delete(customerId, tokenId, auditContext);
    return { json: { tokenId, deleted: true }, text: `SCIM token ${tokenId} deleted.` };
  },
};

export const scimTokenCommands = [scimTokenCreate, scimTokenList, scimTokenDelete];
