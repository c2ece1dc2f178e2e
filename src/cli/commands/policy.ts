/** `policy …`: create, list and delete login policies (the admin routes /admin/policies/*). */
import { toWirePolicy } from '../../identity/policies/routes.ts';
import { parsePolicyId } from '../../identity/policies/service.ts';
import { FIRST_FACTORS, SECOND_FACTORS, type FirstFactor, type SecondFactor } from '../../identity/policies/types.ts';
import { stringFlag, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

export const policyCreate: Command = {
  name: 'policy create',
  usage: 'policy create --customer-key K --app UUID --first-factor MAGIC_LINK|PASSWORD [--second-factor NONE|AUTHENTICATOR_APP] [--group G] [--json]',
  summary: "Create an application's login policy, for one group (--group) or application-wide.",
  async run(args, { app }) {
    const customerId = await customerIdOf(args, app);
    const firstFactor = stringFlag(args, 'first-factor', true).toUpperCase();
    if (!FIRST_FACTORS.includes(firstFactor as FirstFactor)) throw new UsageError('--first-factor must be MAGIC_LINK or PASSWORD');
    const secondFactor = (stringFlag(args, 'second-factor') ?? 'NONE').toUpperCase();
    if (!SECOND_FACTORS.includes(secondFactor as SecondFactor)) throw new UsageError('--second-factor must be NONE or AUTHENTICATOR_APP');
    const policy = toWirePolicy(await app.services.policies.create(customerId, {
      applicationUuid: stringFlag(args, 'app', true),
      firstFactor: firstFactor as FirstFactor,
      secondFactor: secondFactor as SecondFactor,
      groupName: stringFlag(args, 'group'),
    }));
    const scope = policy.groupName === '' ? 'all users' : `group ${policy.groupName}`;
    return { json: policy, text: `Policy ${policy.policyId} created for ${scope}: ${policy.firstFactor}, second factor ${policy.secondFactor}.` };
  },
};

export const policyList: Command = {
  name: 'policy list',
  usage: 'policy list --customer-key K [--json]',
  summary: "List a customer's login policies.",
  async run(args, { app }) {
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
  async run(args, { app }) {
    const customerId = await customerIdOf(args, app);
    const policyId = parsePolicyId(stringFlag(args, 'id', true));
    await app.services.policies.delete(customerId, policyId);
    return { json: { policyId, deleted: true }, text: `Policy ${policyId} deleted.` };
  },
};

export const policyCommands = [policyCreate, policyList, policyDelete];
