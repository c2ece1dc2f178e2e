/**
 * The rules of a login policy's input, whichever face writes it (admin API, console, CLI): its id, and
 * the group it is for. Absent or blank means application-wide, so no minimum length and no trimming pattern; the
 * name is trimmed and then matched case-insensitively against group names, so it is bounded as they are.
 */
import { Invalid } from '../../lib/errors.ts';
import { checkText, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';
import { GROUP_NAME } from '../groups/rules.ts';

export const POLICY_GROUP_NAME: TextRule = { maxLength: GROUP_NAME.maxLength };

export const checkPolicyGroupName = (groupName: string | undefined): BrokenRule | undefined =>
  (groupName === undefined ? undefined : checkText('groupName', groupName, POLICY_GROUP_NAME));

/** Policy ids are positive integers below 2^53; a larger number cannot name a row. */
const MAX_POLICY_ID = Number.MAX_SAFE_INTEGER;

/** Parses a policy id given as an integer or a digit string. @throws Invalid otherwise. */
export function parsePolicyId(value: number | string): number {
  const id = typeof value === 'number' ? value : /^[0-9]{1,16}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(id) || id < 1 || id > MAX_POLICY_ID) throw new Invalid('policyId', 'must be a positive integer');
  return id;
}
