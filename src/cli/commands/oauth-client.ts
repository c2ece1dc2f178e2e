/** `oauth-client …`: create, list and delete OAuth clients (the admin routes /admin/oauth-clients/*). */
import { toWireClient } from '../../identity/oauth-clients/routes.ts';
import { stringFlag } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

export const oauthClientCreate: Command = {
  name: 'oauth-client create',
  usage: 'oauth-client create --customer-key K --name N [--json]',
  summary: 'Create an OAuth client (client credentials for POST /oauth/token); prints its secret once.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'name': "a label for the client (1 to 100 characters)" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const { client, clientSecret } = await app.services.oauthClients.create(customerId, { name: stringFlag(args, 'name', true) }, auditContext);
    return {
      json: { clientId: client.clientId, clientSecret },
      text: `OAuth client created: ${client.name}.\n  Client ID:     ${client.clientId}\n  Client secret: ${clientSecret}\nThe client secret is not shown again.`,
    };
  },
};

export const oauthClientList: Command = {
  name: 'oauth-client list',
  usage: 'oauth-client list --customer-key K [--json]',
  summary: "List a customer's OAuth clients (never their secrets).",
  options: { 'customer-key': "the numeric customer key (customer list shows it)" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const clients = (await app.services.oauthClients.list(customerId)).map(toWireClient);
    return {
      json: clients,
      text: clients.map((c) => [c.clientId, c.name, new Date(c.createdAt).toISOString()].join('\t')).join('\n') || 'No OAuth clients.',
    };
  },
};

export const oauthClientDelete: Command = {
  name: 'oauth-client delete',
  usage: 'oauth-client delete --customer-key K --client-id ID [--json]',
  summary: 'Delete an OAuth client; its secret stops working at once.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'client-id': "the client's id, as create or list shows it" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const clientId = stringFlag(args, 'client-id', true);
    await app.services.oauthClients.delete(customerId, clientId, auditContext);
    return { json: { clientId, deleted: true }, text: `OAuth client ${clientId} deleted.` };
  },
};

export const oauthClientCommands = [oauthClientCreate, oauthClientList, oauthClientDelete];
