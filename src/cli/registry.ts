/** Every command of `npx latchkey`, in the order --help lists them (a group at a time). */
import type { Command } from './command.ts';
import { appCommands } from './commands/app.ts';
import { auditList } from './commands/audit.ts';
import { apiTokenCreate, apiTokenList, apiTokenPurgeExpired, apiTokenRevoke } from './commands/api-token.ts';
import { customerCreate, customerList, customerPasswordExpiry, customerRotateKey } from './commands/customer.ts';
import { customerSetPassword } from './commands/customer-set-password.ts';
import { oauthClientCommands } from './commands/oauth-client.ts';
import { policyCommands } from './commands/policy.ts';
import { scimTokenCommands } from './commands/scim-token.ts';
import { siteCommands } from './commands/site.ts';
import { usersExport } from './commands/users-export.ts';
import { usersImport } from './commands/users-import.ts';
import { usersRevokeSessions } from './commands/users-revoke-sessions.ts';
import { webhookCommands } from './commands/webhook.ts';

export const commands: Command[] = [
  customerCreate, customerList, customerRotateKey, customerPasswordExpiry, customerSetPassword,
  ...appCommands, ...policyCommands, ...oauthClientCommands, ...webhookCommands, ...scimTokenCommands,
  usersImport, usersExport, usersRevokeSessions,
  ...siteCommands.filter((c) => c.name.startsWith('site api-key ')),
  apiTokenCreate, apiTokenList, apiTokenRevoke, apiTokenPurgeExpired,
  ...siteCommands.filter((c) => c.name.startsWith('site config')),
  auditList,
];
