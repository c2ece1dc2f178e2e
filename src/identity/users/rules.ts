/**
 * The rules of a user, whichever face writes it (admin API, console, bulk import, CLI, SCIM): lengths,
 * characters, e-mail and phone formats, custom attribute names. The users service runs them on every
 * create and update; faces read the limits from here (the admin API's schema, the console's maxlength).
 */
import { badCharacters, checkText, clipName, findFirstBroken, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';
import { CUSTOM_ATTRIBUTE_COUNT, type UserInput } from './types.ts';

export const USERNAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };
export const PERSON_NAME: TextRule = { maxLength: 100 };
export const EMAIL: TextRule = { minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' };
export const PHONE: TextRule = { maxLength: 32, pattern: '^[0-9+()./ -]*$' };
export const CUSTOM_ATTRIBUTE_VALUE: TextRule = { maxLength: 1024 };
/** SCIM's externalId: the provisioning directory's own id for the user (Okta's 00u…, Entra's object id). */
export const EXTERNAL_ID: TextRule = { maxLength: 255 };
/** A name/value pair of a membership (users/create's `groups[].attributes`). */
export const MEMBERSHIP_ATTRIBUTE_NAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };
export const MEMBERSHIP_ATTRIBUTE_VALUE: TextRule = { maxLength: 1024 };
/** Bounds of a password as text; its strength is lib/passwords.ts's checkPasswordRule. */
export const PASSWORD_TEXT: TextRule = { minLength: 1, maxLength: 1024 };
export const MAX_GROUPS_PER_USER = 100;
export const MAX_ATTRIBUTES_PER_MEMBERSHIP = 50;

export const CUSTOM_ATTRIBUTE_NAMES: readonly string[] = Array.from({ length: CUSTOM_ATTRIBUTE_COUNT }, (_, i) => `customAttribute${i + 1}`);
const customAttributeNames = new Set(CUSTOM_ATTRIBUTE_NAMES);

export const isCustomAttributeName = (name: string): boolean => customAttributeNames.has(name);

/** Attributes are customAttribute1..customAttribute50 only: any other name could shadow a field of the record. */
export function checkCustomAttributeName(name: string): BrokenRule | undefined {
  if (isCustomAttributeName(name)) return undefined;
  return { field: clipName(name), reason: 'is not a custom attribute name (customAttribute1..customAttribute50)' };
}

const checkEmail = (field: string, value: string) => checkText(field, value, EMAIL);

/** An alternate e-mail may be cleared with "" (the admin API's `anyOf` of an e-mail and the empty string). */
const checkAlternateEmail = (value: string) => (value === '' ? undefined : checkEmail('alternateEmail', value));

function checkCustomAttributes(attributes: Record<string, string>): BrokenRule | undefined {
  for (const [name, value] of Object.entries(attributes)) {
    const broken = checkCustomAttributeName(name) ?? checkText(name, value, CUSTOM_ATTRIBUTE_VALUE);
    if (broken) return broken;
  }
  return undefined;
}

function checkGroups(groups: UserInput['groups']): BrokenRule | undefined {
  if (groups === undefined) return undefined;
  if (groups.length > MAX_GROUPS_PER_USER) return { field: 'groups', reason: `must NOT have more than ${MAX_GROUPS_PER_USER} items` };
  // A group's name here only names an existing group (the groups service refuses one that does not exist):
  // the membership's attributes are what this write stores.
  for (const [i, group] of groups.entries()) {
    if (group.attributes.length > MAX_ATTRIBUTES_PER_MEMBERSHIP) return { field: `groups.${i}.attributes`, reason: `must NOT have more than ${MAX_ATTRIBUTES_PER_MEMBERSHIP} items` };
    for (const [j, attribute] of group.attributes.entries()) {
      const bad = checkText(`groups.${i}.attributes.${j}.name`, attribute.name, MEMBERSHIP_ATTRIBUTE_NAME)
        ?? checkText(`groups.${i}.attributes.${j}.value`, attribute.value, MEMBERSHIP_ATTRIBUTE_VALUE);
      if (bad) return bad;
    }
  }
  return undefined;
}

/** The password as text (its strength is checked after, by checkPasswordRule). */
export const checkPasswordText = (password: string | undefined) => (password === undefined ? undefined : checkText('password', password, PASSWORD_TEXT));

/**
 * The first rule a create or an update breaks (fields left undefined are not checked: an update keeps
 * them, and create's required fields are the service's to demand). An update's username only names the
 * user (it never changes), so it is checked on create only: a user stored before these rules stays editable.
 */
export function checkUserInput(input: UserInput, write: 'create' | 'update'): BrokenRule | undefined {
  return findFirstBroken(
    () => (write === 'create' ? checkText('username', input.username, USERNAME) : undefined),
    () => (input.email === undefined ? undefined : checkEmail('email', input.email)),
    () => (input.firstName === undefined ? undefined : checkText('firstName', input.firstName, PERSON_NAME)),
    () => (input.lastName === undefined ? undefined : checkText('lastName', input.lastName, PERSON_NAME)),
    () => (input.phone === undefined ? undefined : checkText('phone', input.phone, PHONE)),
    () => checkPasswordText(input.password),
    () => (input.alternateEmail === undefined ? undefined : checkAlternateEmail(input.alternateEmail)),
    () => checkGroups(input.groups),
    () => checkCustomAttributes(input.customAttributes),
    () => (input.externalId === undefined ? undefined : checkText('externalId', input.externalId, EXTERNAL_ID)),
  );
}

/**
 * Every field's first broken rule (checkUserInput stops at the first field): a form shows all of its
 * problems at once, each beside its field.
 */
export function checkUserInputFields(input: UserInput, write: 'create' | 'update'): BrokenRule[] {
  // One field at a time; the username (checked on create only) is checked on its own.
  const one = (change: Partial<UserInput>) => checkUserInput({ username: input.username, customAttributes: {}, ...change }, 'update');
  const broken = [
    write === 'create' ? checkText('username', input.username, USERNAME) : undefined,
    one({ email: input.email }), one({ firstName: input.firstName }), one({ lastName: input.lastName }),
    one({ phone: input.phone }), one({ password: input.password }), one({ alternateEmail: input.alternateEmail }),
    one({ groups: input.groups }), one({ customAttributes: input.customAttributes }), one({ externalId: input.externalId }),
  ];
  return broken.filter((b): b is BrokenRule => b !== undefined);
}

/** Whether a username can serve as the e-mail of a user created without one. */
export const looksLikeEmail = (value: string): boolean => badCharacters(value) === undefined && checkEmail('email', value) === undefined;
