/** `app …`: create, list and delete a customer's applications (the admin routes /admin/applications/*). */
import { toWireApplication } from '../../identity/applications/routes.ts';
import { APPLICATION_TYPES, type ApplicationType } from '../../identity/applications/types.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

/** A list flag: URLs separated by commas (the URL rule forbids commas inside one). */
function urlsFlag(args: ParsedArgs, name: string): string[] | undefined {
  const raw = stringFlag(args, name);
  return raw === undefined ? undefined : raw.split(',').map((u) => u.trim()).filter((u) => u.length > 0);
}

export const appCreate: Command = {
  name: 'app create',
  usage: 'app create --customer-key K --name N --type JWT|OAUTH|SAML [--return-urls U,…] [--redirect-uris U,…] [--login-urls U,…] [--json]',
  summary: "Create an application (JWT needs --return-urls, OAUTH --redirect-uris); prints an OAUTH application's client secret once.",
  async run(args, { app }) {
    const customerId = await customerIdOf(args, app);
    const type = stringFlag(args, 'type', true).toUpperCase();
    if (!APPLICATION_TYPES.includes(type as ApplicationType)) throw new UsageError('--type must be JWT, OAUTH or SAML');
    const created = await app.services.applications.create(customerId, {
      name: stringFlag(args, 'name', true),
      type: type as ApplicationType,
      returnUrls: urlsFlag(args, 'return-urls'),
      redirectUris: urlsFlag(args, 'redirect-uris'),
      loginUrls: urlsFlag(args, 'login-urls'),
    });
    const application = toWireApplication(created.application);
    const lines = [`Application ${application.applicationUuid} (${application.type}) created: ${application.name}.`];
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
  async run(args, { app }) {
    const customerId = await customerIdOf(args, app);
    const applications = (await app.services.applications.list(customerId)).map(toWireApplication);
    return {
      json: applications,
      text: applications.map((a) => [a.applicationUuid, a.type, a.name, [...a.returnUrls, ...a.redirectUris].join(' ')].join('\t')).join('\n')
        || 'No applications.',
    };
  },
};

export const appDelete: Command = {
  name: 'app delete',
  usage: 'app delete --customer-key K --uuid UUID [--json]',
  summary: 'Delete an application with its login policies and magic links.',
  async run(args, { app }) {
    const customerId = await customerIdOf(args, app);
    const uuid = stringFlag(args, 'uuid', true);
    await app.services.applications.delete(customerId, uuid);
    return { json: { applicationUuid: uuid.toLowerCase(), deleted: true }, text: `Application ${uuid} deleted.` };
  },
};

export const appCommands = [appCreate, appList, appDelete];
