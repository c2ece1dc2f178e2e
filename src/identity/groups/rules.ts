/**
 * The rules of a group, whichever face writes it (admin API, console, bulk import): its name, and
 * attributes named groupAttribute1..groupAttribute50 only. The groups service runs them on every write;
 * faces read the limits from here.
 */
import { checkText, clipName, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';
import { GROUP_ATTRIBUTE_COUNT, type GroupInput } from './types.ts';

export const GROUP_NAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };
export const GROUP_ATTRIBUTE_VALUE: TextRule = { maxLength: 1024 };
/** SCIM's externalId: the provisioning directory's own id for the group. */
export const GROUP_EXTERNAL_ID: TextRule = { maxLength: 255 };

export const checkGroupExternalId = (externalId: string): BrokenRule | undefined => checkText('externalId', externalId, GROUP_EXTERNAL_ID);

export const GROUP_ATTRIBUTE_NAMES: readonly string[] = Array.from({ length: GROUP_ATTRIBUTE_COUNT }, (_, i) => `groupAttribute${i + 1}`);
const groupAttributeNames = new Set(GROUP_ATTRIBUTE_NAMES);

export const isGroupAttributeName = (name: string): boolean => groupAttributeNames.has(name);

/** Attributes are groupAttribute1..groupAttribute50 only: any other name could shadow a field of the record. */
export function checkGroupAttributeName(name: string): BrokenRule | undefined {
  if (isGroupAttributeName(name)) return undefined;
  return { field: clipName(name), reason: 'is not a group attribute name (groupAttribute1..groupAttribute50)' };
}

export const checkGroupName = (field: string, name: string): BrokenRule | undefined => checkText(field, name, GROUP_NAME);

/**
 * The first rule a group's attributes break; `prefix` names the fields as the caller's wire does. The name
 * is checkGroupName's, on create: an upsert's name of an existing group only names it (a group stored before
 * these rules stays editable).
 */
export function checkGroupAttributes(input: GroupInput, attributesPrefix = ''): BrokenRule | undefined {
  for (const [name, value] of Object.entries(input.attributes)) {
    const bad = checkGroupAttributeName(name) ?? checkText(`${attributesPrefix}${name}`, value, GROUP_ATTRIBUTE_VALUE);
    if (bad) return bad;
  }
  return undefined;
}
