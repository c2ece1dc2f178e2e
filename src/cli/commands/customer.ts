import type { Command } from '../command.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';

function customerKeyFlag(args: ParsedArgs): string {
  const value = stringFlag(args, 'customer-key', true);
  if (!/^[0-9]{1,20}$/.test(value)) throw new UsageError('--customer-key must be the numeric customer key');
  return value;
}

export const customerCreate: Command = {
  name: 'customer create',
  usage: 'customer create --email E [--password P] [--name N] [--json]',
  summary: 'Create a customer account; prints its customer key and API key once. Creates the data directory and database when they do not exist.',
  options: { 'email': "the owner's e-mail, unique among customers: the owner signs in to the console with it", 'password': "the owner's console password (optional; it appears in the process list: prefer customer set-password)", 'name': "the customer's display name (default: the e-mail's domain)" },
  createsDatabase: true,
  async run(args, { app, auditContext }) {
    const created = await app.services.customers.create({
      email: stringFlag(args, 'email', true),
      password: stringFlag(args, 'password'),
      displayName: stringFlag(args, 'name'),
    });
    return {
      json: { customerId: created.customerId, customerKey: Number(created.customerKey), apiKey: created.apiKey },
      text: `Customer ${created.customerId} created.\n  Customer key: ${created.customerKey}\n  API key:      ${created.apiKey}\nThe API key is not shown again.`,
    };
  },
};

export const customerList: Command = {
  name: 'customer list',
  usage: 'customer list [--json]',
  summary: 'List customer accounts (never their API keys).',
  options: {  },
  async run(_args, { app, auditContext }) {
    const customers = await app.services.customers.list(1000);
    return {
      json: customers.map((c) => ({ customerId: c.id, customerKey: Number(c.customerKey), email: c.email, name: c.displayName })),
      text: customers.map((c) => `${c.id}\t${c.customerKey}\t${c.email}\t${c.displayName}`).join('\n') || 'No customers.',
    };
  },
};

export const customerRotateKey: Command = {
  name: 'customer rotate-key',
  usage: 'customer rotate-key --customer-key K [--json]',
  summary: "Replace a customer's API key; prints the new key once.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)" },
  async run(args, { app, auditContext }) {
    const customerKey = customerKeyFlag(args);
    const apiKey = await app.services.customers.rotateApiKey(customerKey, auditContext);
    return { json: { customerKey: Number(customerKey), apiKey }, text: `New API key: ${apiKey}\nThe old key stops working within seconds.` };
  },
};

export const customerPasswordExpiry: Command = {
  name: 'customer password-expiry',
  usage: 'customer password-expiry --customer-key K --days N|off [--json]',
  summary: "Set the customer's password expiry policy (days), or turn it off.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'days': "days after a password change until it expires, or off for no expiry" },
  async run(args, { app, auditContext }) {
    const customerKey = customerKeyFlag(args);
    const raw = stringFlag(args, 'days', true);
    if (raw !== 'off' && !/^[0-9]{1,4}$/.test(raw)) throw new UsageError('--days must be a number of days or "off"');
    const days = raw === 'off' ? null : Number(raw);
    await app.services.customers.setPasswordExpiryDays(customerKey, days);
    return { json: { customerKey: Number(customerKey), passwordExpiryDays: days }, text: days === null ? 'Password expiry off.' : `Passwords expire after ${days} days.` };
  },
};
