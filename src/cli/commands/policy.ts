/** `policy …`: create, list and delete login policies (the admin routes /admin/policies/*). */
import { toWirePolicy } from '../../identity/policies/routes.ts';
import { parsePolicyId } from '../../identity/policies/rules.ts';
import { FIRST_FACTORS, SECOND_FACTORS, type FirstFactor, type SecondFactor } from '../../identity/policies/types.ts';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

export const policyCreate: Command = {
  name: 'policy create',
  usage: 'policy create --customer-key K --app UUID --first-factor MAGIC_LINK|PASSWORD|PASSKEY [--second-factor NONE|AUTHENTICATOR_APP|PASSKEY|ANY] [--group G] [--json]',
  summary: "Create an application's login policy, for one group (--group) or application-wide.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'app': "the application's UUID (app list shows it)", 'first-factor': "MAGIC_LINK (an e-mailed link), PASSWORD or PASSKEY (username-less, with user verification)", 'second-factor': "NONE (default), AUTHENTICATOR_APP (a code from the user's authenticator app), PASSKEY, or ANY (either)", 'group': "the group whose members the policy is for (need not exist yet); without it, every user of the application" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const firstFactor = stringFlag(args, 'first-factor', true).toUpperCase();
    if (!FIRST_FACTORS.includes(firstFactor as FirstFactor)) throw new UsageError(`--first-factor must be one of ${FIRST_FACTORS.join(', ')}`);
    const secondFactor = (stringFlag(args, 'second-factor') ?? 'NONE').toUpperCase();
    if (!SECOND_FACTORS.includes(secondFactor as SecondFactor)) throw new UsageError(`--second-factor must be one of ${SECOND_FACTORS.join(', ')}`);
    const policy = toWirePolicy(await app.services.policies.create(customerId, {
      applicationUuid: stringFlag(args, 'app', true),
      firstFactor: firstFactor as FirstFactor,
      secondFactor: secondFactor as SecondFactor,
      groupName: stringFlag(args, 'group'),
    }, auditContext));
    const scope = policy.groupName === '' ? 'all users' : `group ${policy.groupName}`;
    return { json: policy, text: `Policy ${policy.policyId} created for ${scope}: ${policy.firstFactor}, second factor ${policy.secondFactor}.` };
  },
};

export const policyList: Command = {
  name: 'policy list',
  usage: 'policy list --customer-key K [--json]',
  summary: "List a customer's login policies.",
  options: { 'customer-key': "the numeric customer key (customer list shows it)" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const policies = (await app.services.policies.list(customerId)).map(toWirePolicy);
    return {
      json: policies,
      text: policies.map((p) => [p.policyId, p.applicationUuid, p.firstFactor, p.secondFactor, p.groupName || '(all users)'].join('\t')).join('\n')
        || 'No policies.',
    };
  },
};

export const policyDelete: Command = {
  name: 'policy delete',
  usage: 'policy delete --customer-key K --id N [--json]',
  summary: 'Delete a login policy.',
  options: { 'customer-key': "the numeric customer key (customer list shows it)", 'id': "the policy's id, as create or list shows it" },
  async run(args, { app, auditContext }) {
    const customerId = await customerIdOf(args, app);
    const policyId = parsePolicyId(stringFlag(args, 'id', true));
    await app.services.policies.delete(customerId, policyId, auditContext);
    return { json: { policyId, deleted: true }, text: `Policy ${policyId} deleted.` };
  },
};

export const policyCommands = [policyCreate, policyList, policyDelete];
