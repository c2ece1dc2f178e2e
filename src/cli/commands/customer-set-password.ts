import type { Command } from '../command.ts';
import { stringFlag, UsageError } from '../args.ts';

export const customerSetPassword: Command = {
  name: 'customer set-password',
  usage: 'customer set-password --customer-key K --password P [--json]',
  summary: "Set the owner's console password (the owner signs in at {public URL}/console with the customer's e-mail); ends the owner's console sessions.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'password': "the owner's new console password (it appears in the process list)" },
  async run(args, { app, auditContext }) {
    const customerKey = stringFlag(args, 'customer-key', true);
    if (!/^[0-9]{1,20}$/.test(customerKey)) throw new UsageError('--customer-key must be the numeric customer key');
    const password = stringFlag(args, 'password', true);
    const { consoleOwners: owners, consoleSessions: sessions } = app.services;
    const { customerId, email } = await owners.setPassword(customerKey, password);
    await sessions.endAll(customerId);
    return {
      json: { customerKey: Number(customerKey), email, passwordSet: true },
      text: `Console password set for ${email}. Sign in at ${app.config.publicUrl.replace(/\/+$/, '')}/console`,
    };
  },
};
