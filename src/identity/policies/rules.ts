/**
 * The rules of a login policy's free text, whichever face writes it (admin API, console, CLI): the group
 * it is for. Absent or blank means application-wide, so no minimum length and no trimming pattern; the
 * name is trimmed and then matched case-insensitively against group names, so it is bounded as they are.
 */
import { checkText, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';
import { GROUP_NAME } from '../groups/rules.ts';

export const POLICY_GROUP_NAME: TextRule = { maxLength: GROUP_NAME.maxLength };

export const checkPolicyGroupName = (groupName: string | undefined): BrokenRule | undefined =>
  (groupName === undefined ? undefined : checkText('groupName', groupName, POLICY_GROUP_NAME));
