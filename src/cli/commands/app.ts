/** `app …`: create, list and delete a customer's applications (the admin routes /admin/applications/*). */
import { readFileSync } from 'node:fs';
import { toWireApplication } from '../../identity/applications/wire.ts';
import { APPLICATION_TYPES, type ApplicationType } from '../../identity/applications/types.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

/** A list flag: URLs separated by commas (the URL rule forbids commas inside one). */
function urlsFlag(args: ParsedArgs, name: string): string[] | undefined {
  const raw = stringFlag(args, name);
  return raw === undefined ? undefined : raw.split(',').map((u) => u.trim()).filter((u) => u.length > 0);
}

/** A flag naming a file whose text is the value (a PEM certificate, a metadata document). @throws UsageError when it cannot be read. */
function fileFlag(args: ParsedArgs, name: string): string | undefined {
  const file = stringFlag(args, name);
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`--${name}: cannot read ${file}`);
  }
}

/** A SAML application's settings in the text list: entity ID, ACS URLs, NameID format. */
const samlText = (a: ReturnType<typeof toWireApplication>) => (a.entityId === undefined ? '' : `${a.entityId} ${a.acsUrls!.join(' ')} ${a.nameIdFormat}`);

export const appCreate: Command = {
  name: 'app create',
  usage: 'app create --customer-key K --name N --type JWT|OAUTH|SAML [--return-urls U,…] [--redirect-uris U,…] [--login-urls U,…] [--post-logout-redirect-uris U,…] '
    + '[--entity-id E --acs-urls U,… [--name-id-format F] [--slo-url U] [--sp-certificate FILE] | --sp-metadata FILE [--name-id-format F]] [--json]',
  summary: "Create an application (JWT needs --return-urls, OAUTH --redirect-uris, SAML --entity-id and --acs-urls or --sp-metadata); prints an OAUTH application's client secret once.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'name': "the application's name (1 to 100 characters)", 'type': "JWT (an id_token posted to a return URL), OAUTH (an OpenID Connect client) or SAML (a SAML 2.0 service provider: a signed Response posted to its ACS URL)", 'return-urls': "JWT: where a signed-in user may be sent, comma-separated (at least one)", 'redirect-uris': "OAUTH: the client's redirect URIs, comma-separated (at least one)", 'login-urls': "OAUTH: where a magic link sends the user to sign in, comma-separated (optional)", 'post-logout-redirect-uris': "OAUTH: where signing out may send the browser back (post_logout_redirect_uri, exactly one of these), comma-separated (optional)",
    'entity-id': "SAML: the service provider's entity ID (a URI or URN), unique per customer",
    'acs-urls': "SAML: the assertion consumer service URLs, comma-separated (at least one; the first is the default)",
    'name-id-format': "SAML: emailAddress (the default), persistent or unspecified",
    'slo-url': "SAML: where the LogoutResponse of single logout goes (optional)",
    'sp-certificate': "SAML: a file holding the PEM certificate the SP signs its requests with (optional; then unsigned requests are refused)",
    'sp-metadata': "SAML: a file holding the SP's metadata XML, instead of --entity-id, --acs-urls, --slo-url and --sp-certificate" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const type = stringFlag(args, 'type', true).toUpperCase();
    if (!APPLICATION_TYPES.includes(type as ApplicationType)) throw new UsageError('--type must be JWT, OAUTH or SAML');
    const created = await app.services.applications.create(customerId, {
      name: stringFlag(args, 'name', true),
      type: type as ApplicationType,
      returnUrls: urlsFlag(args, 'return-urls'),
      redirectUris: urlsFlag(args, 'redirect-uris'),
      loginUrls: urlsFlag(args, 'login-urls'),
      postLogoutRedirectUris: urlsFlag(args, 'post-logout-redirect-uris'),
      entityId: stringFlag(args, 'entity-id'),
      acsUrls: urlsFlag(args, 'acs-urls'),
      nameIdFormat: stringFlag(args, 'name-id-format'),
      sloUrl: stringFlag(args, 'slo-url'),
      spCertificate: fileFlag(args, 'sp-certificate'),
      spMetadata: fileFlag(args, 'sp-metadata'),
    }, auditContext);
    const application = toWireApplication(created.application);
    const lines = [`Application ${application.applicationUuid} (${application.type}) created: ${application.name}.`];
    if (application.entityId !== undefined) lines.push(`  Entity ID: ${application.entityId}`, `  ACS URLs:  ${application.acsUrls!.join(' ')}`);
    if (created.clientSecret !== undefined) {
      lines.push(`  Client ID:     ${application.applicationUuid}`, `  Client secret: ${created.clientSecret}`, 'The client secret is not shown again.');
    }
    return {
      json: created.clientSecret === undefined ? { application } : { application, clientSecret: created.clientSecret },
      text: lines.join('\n'),
    };
  },
};

export const appList: Command = {
  name: 'app list',
  usage: 'app list --customer-key K [--json]',
  summary: "List a customer's applications (never their secrets).",
  options: { 'customer-key': "the numeric customer key (customer list shows it)" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const applications = (await app.services.applications.list(customerId)).map(toWireApplication);
    return {
      json: applications,
      text: applications.map((a) => [a.applicationUuid, a.type, a.name, [...a.returnUrls, ...a.redirectUris].join(' ') || samlText(a)].join('\t')).join('\n')
        || 'No applications.',
    };
  },
};

export const appDelete: Command = {
  name: 'app delete',
  usage: 'app delete --customer-key K --uuid UUID [--json]',
  summary: 'Delete an application with its login policies and magic links.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'uuid': "the application's UUID, as create or list shows it" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const uuid = stringFlag(args, 'uuid', true);
    await app.services.applications.delete(customerId, uuid, auditContext);
    return { json: { applicationUuid: uuid.toLowerCase(), deleted: true }, text: `Application ${uuid} deleted.` };
  },
};

export const appCommands = [appCreate, appList, appDelete];
