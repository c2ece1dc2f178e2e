/** `site api-token …`: create, list, revoke and purge a site user's API tokens from the shell. */
import type { Composition } from '../../compose/index.ts';
import { Invalid, UserNotFound } from '../../lib/errors.ts';
import { toWireToken } from '../../site/api-tokens/routes.ts';
import { API_TOKEN_TYPES, type ApiTokenType } from '../../site/api-tokens/types.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { siteCustomerId } from './site.ts';


async function userOf(app: Composition, customerId: number, login: string) {
  const user = await app.services.users.findByLogin(customerId, login);
  if (!user) throw new UserNotFound();
  return user;
}

function positiveInt(args: ParsedArgs, name: string, required: true): number;
function positiveInt(args: ParsedArgs, name: string, required?: false): number | undefined;
function positiveInt(args: ParsedArgs, name: string, required = false): number | undefined {
  const raw = stringFlag(args, name, required as true);
  if (raw === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new UsageError(`--${name} must be a positive whole number`);
  return Number(raw);
}

const dateText = (iso: string | null): string => (iso === null ? 'never' : iso);

export const apiTokenCreate: Command = {
  name: 'site api-token create',
  usage: 'site api-token create --user U --name N --type basic|bearer [--expires-days D] [--customer-key K] [--json]',
  summary: "Create a site user's API token; prints the secret once.",
  options: { 'user': "the site user who owns the token (username or e-mail)", 'name': "a label for the token (1 to 100 characters)", 'type': "basic (sent as Basic with the username) or bearer (sent alone as Bearer)", 'expires-days': "days until the token expires (default: the longest LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS allows)", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const type = stringFlag(args, 'type', true);
    if (!API_TOKEN_TYPES.includes(type as ApiTokenType)) throw new UsageError('--type must be basic or bearer');
    const user = await userOf(app, customerId, stringFlag(args, 'user', true));
    const name = stringFlag(args, 'name', true);
    if (name.trim().length === 0) throw new Invalid('name', 'must be 1 to 100 characters');
    const created = await app.services.apiTokens.create(customerId, {
      userId: user.id, name, type: type as ApiTokenType, expiresInDays: positiveInt(args, 'expires-days'),
    }, auditContext);
    const wire = { ...toWireToken(created, created.createdAt), token: created.secret };
    return {
      json: wire,
      text: [
        `API token ${wire.id} (${wire.type}) created for ${wire.username}; expires: ${dateText(wire.expiresAt)}.`,
        `  Token: ${wire.token}`,
        'The token is not shown again.',
      ].join('\n'),
    };
  },
};

export const apiTokenList: Command = {
  name: 'site api-token list',
  usage: 'site api-token list --user U [--customer-key K] [--json]',
  summary: "List a site user's API tokens (never their secrets).",
  options: { 'user': "the site user whose tokens are listed (username or e-mail)", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const user = await userOf(app, customerId, stringFlag(args, 'user', true));
    const now = app.clock.now();
    const tokens = (await app.services.apiTokens.list(customerId, user.id)).map((t) => toWireToken(t, now));
    return {
      json: tokens,
      text: tokens.map((t) => [t.id, t.type, t.name, `created ${t.createdAt}`, `expires ${dateText(t.expiresAt)}${t.expired ? ' (expired)' : ''}`,
        `last used ${t.lastUsedAt ?? 'never'}`].join('\t')).join('\n') || 'No API tokens.',
    };
  },
};

export const apiTokenRevoke: Command = {
  name: 'site api-token revoke',
  usage: 'site api-token revoke --id N [--customer-key K] [--json]',
  summary: 'Revoke (delete) an API token; it stops working at once.',
  options: { 'id': "the token's id, as create or list shows it", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const token = await app.services.apiTokens.revoke(customerId, positiveInt(args, 'id', true), auditContext);
    return { json: { id: token.id, revoked: true }, text: `API token ${token.id} (${token.name}, ${token.username}) revoked.` };
  },
};

export const apiTokenPurgeExpired: Command = {
  name: 'site api-token purge-expired',
  usage: 'site api-token purge-expired [--user U] [--customer-key K] [--json]',
  summary: "Delete a user's expired API tokens; without --user, run the scheduler's purge once.",
  options: { 'user': "delete this user's expired tokens; without it, run the scheduled purge for every customer", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const login = stringFlag(args, 'user');
    if (login === undefined) {
      const deleted = await app.services.apiTokens.purgeExpired();
      const days = app.config.site.apiTokens.purgeAfterDays;
      return { json: { deleted }, text: `Deleted ${deleted} API token(s) expired for more than ${days} day(s).` };
    }
    const customerId = await siteCustomerId(args, app);
    const user = await userOf(app, customerId, login);
    const deleted = await app.services.apiTokens.deleteExpired(customerId, user.id, auditContext);
    return { json: { deleted }, text: `Deleted ${deleted} expired API token(s) of ${user.username}.` };
  },
};
