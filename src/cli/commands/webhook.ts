/** `webhook …`: create, list and delete webhook endpoints (the admin routes /admin/webhooks/*). */
import { toWireWebhook } from '../../webhooks/routes.ts';
import { stringFlag } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

export const webhookCreate: Command = {
  name: 'webhook create',
  usage: 'webhook create --customer-key K --url URL [--events user.,group.] [--json]',
  summary: 'Create a webhook endpoint for audit events; prints its signing secret once.',
  options: {
    'customer-key': 'the numeric customer key (customer list shows it)',
    'url': 'where deliveries are POSTed (https://)',
    'events': 'comma-separated action prefixes, e.g. user.,group.; default * (every event)',
  },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const events = (stringFlag(args, 'events') ?? '*').split(',').map((e) => e.trim()).filter(Boolean);
    const { webhook, secret } = await app.services.webhooks.create(customerId, { url: stringFlag(args, 'url', true), events }, auditContext);
    return {
      json: { webhookId: webhook.webhookId, secret },
      text: `Webhook created for ${webhook.url} (${webhook.events.join(', ')}).\n  Webhook ID: ${webhook.webhookId}\n  Secret:     ${secret}\nThe secret is not shown again.`,
    };
  },
};

export const webhookList: Command = {
  name: 'webhook list',
  usage: 'webhook list --customer-key K [--json]',
  summary: "List a customer's webhook endpoints (never their secrets).",
  options: { 'customer-key': 'the numeric customer key (customer list shows it)' },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const webhooks = (await app.services.webhooks.list(customerId)).map(toWireWebhook);
    return {
      json: webhooks,
      text: webhooks.map((w) => [w.webhookId, w.url, w.events.join(','), w.enabled ? 'enabled' : 'disabled'].join('\t')).join('\n') || 'No webhooks.',
    };
  },
};

export const webhookDelete: Command = {
  name: 'webhook delete',
  usage: 'webhook delete --customer-key K --webhook-id ID [--json]',
  summary: 'Delete a webhook endpoint and its deliveries.',
  options: { 'customer-key': 'the numeric customer key (customer list shows it)', 'webhook-id': "the endpoint's id (wh_…), as create or list shows it" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const webhookId = stringFlag(args, 'webhook-id', true);
    await app.services.webhooks.delete(customerId, webhookId, auditContext);
    return { json: { webhookId, deleted: true }, text: `Webhook ${webhookId} deleted.` };
  },
};

export const webhookCommands = [webhookCreate, webhookList, webhookDelete];
