import type { Composition } from '../../compose/index.ts';
import { SITE_METHODS, type SiteMethod } from '../../config.ts';
import { NotFound } from '../../lib/errors.ts';
import { toWireKey } from '../../site/api-keys/wire.ts';
import type { SiteSettingChanges } from '../../site/settings/service.ts';
import type { ParsedArgs } from '../args.ts';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The customer whose site a command manages: --customer-key, else the site's customer. */
export async function siteCustomerId(args: ParsedArgs, app: Composition): Promise<number> {
  const key = stringFlag(args, 'customer-key') ?? app.config.site.customerKey;
  // Part of the composition, which a command that runs has loaded already (not --help).
  const { resolveSiteCustomer, SiteCustomerUnresolved } = await import('../../compose/site.ts');
  try {
    return (await resolveSiteCustomer(app.services.customers, key, app.services.siteSettings)).id;
  } catch (error) {
    // Not an unexpected failure: say what to configure, as a domain error.
    if (error instanceof SiteCustomerUnresolved) throw new NotFound('customer', error.message);
    throw error;
  }
}

function positiveInt(args: ParsedArgs, name: string): number | undefined {
  const raw = stringFlag(args, name);
  if (raw === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw new UsageError(`--${name} must be a positive integer`);
  return Number(raw);
}

export const siteApiKeyCreate: Command = {
  name: 'site api-key create',
  usage: 'site api-key create [--user USERNAME] [--name N] [--expires-days D] [--customer-key K] [--json]',
  summary: "Create a site API key (the default read-only key, or a user's); prints it once.",
  options: { 'user': "the site user the key acts as (username or e-mail); without it, the site's default read-only key", 'name': "a label for the key, shown by list", 'expires-days': "days until the key expires (default: never)", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const days = positiveInt(args, 'expires-days');
    const created = await app.services.siteApiKeys.create(customerId, {
      login: stringFlag(args, 'user'),
      name: stringFlag(args, 'name'),
      expiresAt: days === undefined ? undefined : app.clock.now() + days * DAY_MS,
    }, auditContext);
    const owner = created.key.username === null ? 'the site (default key, read-only)' : `user ${created.key.username}`;
    return {
      json: { id: created.id, apiKey: created.apiKey },
      text: `API key ${created.id} created for ${owner}.\n  API key: ${created.apiKey}\nThe key is not shown again.`,
    };
  },
};

export const siteApiKeyList: Command = {
  name: 'site api-key list',
  usage: 'site api-key list [--user USERNAME] [--customer-key K] [--json]',
  summary: 'List site API keys (never the keys themselves).',
  options: { 'user': "only this user's keys (username or e-mail)", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const login = stringFlag(args, 'user');
    let userId: number | undefined;
    if (login !== undefined) {
      const user = await app.services.users.findByLogin(customerId, login);
      if (!user) throw new UsageError(`no user ${login}`);
      userId = user.id;
    }
    const keys = (await app.services.siteApiKeys.list(customerId, { userId })).map(toWireKey);
    return {
      json: keys,
      text: keys.map((k) => `${k.id}\t${k.user ?? '(default)'}\t${k.name}\t${k.createdAt}\t${k.expiresAt ?? 'never'}\t${k.revoked ? 'revoked' : 'live'}`).join('\n') || 'No API keys.',
    };
  },
};

export const siteApiKeyRevoke: Command = {
  name: 'site api-key revoke',
  usage: 'site api-key revoke --id N [--customer-key K] [--json]',
  summary: 'Revoke a site API key; it stops working at once.',
  options: { 'id': "the key's id, as create or list shows it", 'customer-key': "the customer whose site it is (default: LATCHKEY_SITE_CUSTOMER_KEY, else the customer the site serves)" },
  async run(args, { app, auditContext }) {
    const customerId = await siteCustomerId(args, app);
    const id = positiveInt(args, 'id');
    if (id === undefined) throw new UsageError('--id is required');
    const key = toWireKey(await app.services.siteApiKeys.revoke(customerId, id, auditContext));
    return { json: key, text: `API key ${key.id} revoked.` };
  },
};

export const siteConfigShow: Command = {
  name: 'site config',
  usage: 'site config [--json]',
  summary: 'Show the effective content-site settings (environment and CLI settings; never secrets).',
  options: {  },
  async run(_args, { app, auditContext }) {
    const { config: site, fromCli } = await app.services.siteSettings.effective(app.config.site);
    // Part of the composition, which a command that runs has loaded already (not --help).
    const { isProviderConfigured, resolveSiteCustomer } = await import('../../compose/site.ts');
    const { JWKS_PATH } = await import('../../site/app.ts');
    const siteUrl = app.config.siteUrl;
    let customer: { customerId: number; customerKey: number } | null = null;
    try {
      const found = await resolveSiteCustomer(app.services.customers, site.customerKey, app.services.siteSettings);
      customer = { customerId: found.id, customerKey: Number(found.customerKey) };
    } catch {
      customer = null;
    }
    const { provider } = site;
    const json = {
      siteUrl,
      customer,
      methods: site.methods,
      jwt: {
        alg: site.jwtAlg,
        ttlSeconds: site.jwtTtlSeconds,
        header: site.jwtHeader,
        issuer: siteUrl,
        audience: `${siteUrl}/cms-json`,
        privateKeyFile: site.jwtPrivateKeyFile ?? null,
        jwksUrl: `${siteUrl}${JWKS_PATH}`,
      },
      apiKeyHeader: site.apiKeyHeader,
      editorRoles: site.editorRoles,
      editorGroup: site.editorGroup,
      adminGroup: site.adminGroup,
      provider: {
        configured: isProviderConfigured(provider),
        issuer: provider.issuer ?? null,
        introspectionUrl: provider.introspectionUrl ?? null,
        userinfoUrl: provider.userinfoUrl ?? null,
        clientId: provider.clientId ?? null,
        // Never the secret itself.
        clientSecretSet: Boolean(provider.clientSecret),
        userClaim: provider.userClaim,
        timeoutMs: provider.timeoutMs,
        cacheSeconds: provider.cacheSeconds,
      },
      login: site.login,
      postsCacheMs: site.postsCacheMs,
      fromCli,
    };
    const text = [
      `Site URL:        ${siteUrl}`,
      `Customer:        ${customer ? `${customer.customerId} (key ${customer.customerKey})` : 'none bound (set LATCHKEY_SITE_CUSTOMER_KEY)'}`,
      `Methods:         ${site.methods.join(', ')}`,
      `JWT:             ${site.jwtAlg}, ${site.jwtTtlSeconds} s, header ${site.jwtHeader}`,
      `API key header:  ${site.apiKeyHeader}`,
      `Editors:         roles ${site.editorRoles.join(', ') || '(none)'}; group ${site.editorGroup}`,
      `Site admins:     group ${site.adminGroup}`,
      `Provider:        ${json.provider.configured ? provider.issuer ?? provider.introspectionUrl ?? provider.userinfoUrl : 'not configured'}`,
      `Set by the CLI:  ${fromCli.join(', ') || '(nothing)'}`,
    ].join('\n');
    return { json, text };
  },
};

export const siteConfigSet: Command = {
  name: 'site config set',
  usage: 'site config set [--methods jwt,provider,apikey,apitoken] [--jwt-ttl-seconds N] [--jwt-header H] [--apikey-header H] [--editor-group G] [--editor-roles R1,R2] [--admin-group G] [--json]',
  summary: 'Change content-site settings for every node (applied when the site starts).',
  options: { 'methods': "enabled credential methods, comma-separated: jwt, provider, apikey, apitoken", 'jwt-ttl-seconds': "lifetime of the JWTs the token endpoint issues, in seconds", 'jwt-header': "the request header that carries JWTs (default Authorization)", 'apikey-header': "the request header that carries API keys (default Authorization)", 'editor-group': "the group whose members may write posts", 'editor-roles': "the user roles that may write posts, comma-separated", 'admin-group': "the group whose members administer the site's API keys and tokens" },
  async run(args, { app, auditContext }) {
    const list = (name: string) => stringFlag(args, name)?.split(',').map((v) => v.trim()).filter(Boolean);
    const ttl = positiveInt(args, 'jwt-ttl-seconds');
    const changes: SiteSettingChanges = {
      methods: list('methods') as SiteMethod[] | undefined,
      jwtTtlSeconds: ttl,
      jwtHeader: stringFlag(args, 'jwt-header'),
      apiKeyHeader: stringFlag(args, 'apikey-header'),
      editorGroup: stringFlag(args, 'editor-group'),
      editorRoles: list('editor-roles'),
      adminGroup: stringFlag(args, 'admin-group'),
    };
    const given = Object.entries(changes).filter(([, v]) => v !== undefined).map(([k]) => k);
    if (given.length === 0) throw new UsageError(`give at least one setting (methods: ${SITE_METHODS.join(',')})`);
    await app.services.siteSettings.set(changes);
    return { json: { updated: given }, text: `Updated: ${given.join(', ')}. Restart the site to apply.` };
  },
};

export const siteConfigReset: Command = {
  name: 'site config reset',
  usage: 'site config reset [--json]',
  summary: 'Forget the settings made with `site config set`: the environment applies again.',
  options: {  },
  async run(_args, { app, auditContext }) {
    await app.services.siteSettings.reset();
    return { json: { reset: true }, text: 'Site settings reset to the environment. Restart the site to apply.' };
  },
};

export const siteCommands: Command[] = [siteApiKeyCreate, siteApiKeyList, siteApiKeyRevoke, siteConfigShow, siteConfigSet, siteConfigReset];
