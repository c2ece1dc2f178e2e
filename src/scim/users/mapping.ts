/**
 * A Latchkey user as a SCIM User (RFC 7643 §4.1) and back (DESIGN, SCIM 2.0 mapping): userName ↔
 * username, emails[primary] (or the first) ↔ e-mail, name.givenName/familyName ↔ first/last name,
 * phoneNumbers (primary or first) ↔ phone, active ↔ enabled, externalId kept, password written
 * only, groups read only. Attributes Latchkey does not keep are ignored.
 */
import type { ProvisionedUser, UserChange } from '../../identity/users/provisioning.ts';
import type { UserInput } from '../../identity/users/types.ts';
import { ScimError } from '../errors.ts';
import { resourceMeta } from '../meta.ts';
import { GROUP_RESOURCE, USER_RESOURCE, USER_SCHEMA } from '../schemas.ts';

export function toScimUser(user: ProvisionedUser, baseUrl: string): Record<string, unknown> {
  return {
    schemas: [USER_SCHEMA],
    id: user.guid,
    ...(user.externalId ? { externalId: user.externalId } : {}),
    userName: user.username,
    name: { givenName: user.firstName, familyName: user.lastName },
    emails: [{ value: user.email, type: 'work', primary: true }],
    ...(user.phone ? { phoneNumbers: [{ value: user.phone, type: 'work', primary: true }] } : {}),
    active: !user.isDisabled,
    groups: user.groupRefs.map((g) => ({ value: String(g.id), display: g.name, $ref: `${baseUrl}${GROUP_RESOURCE.endpoint}/${g.id}` })),
    meta: resourceMeta(USER_RESOURCE, baseUrl, user.guid, user),
  };
}

/** What a User resource says, in the users service's words; undefined: not said (kept, or the default). */
export interface UserResource {
  username?: string;
  input: Omit<UserInput, 'username'>;
  isEnabled?: boolean;
}

const invalid = (attribute: string, reason: string) => new ScimError(400, 'invalidValue', `${attribute} ${reason}`);
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function optionalString(resource: Record<string, unknown>, attribute: string, key = attribute): string | undefined {
  const value = resource[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(attribute, 'must be a string');
  return value;
}

/** True and false, and Entra ID's "True" and "False". */
export function readBoolean(value: unknown, attribute: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw invalid(attribute, 'must be true or false');
}

/** The value of the primary entry of a multi-valued attribute, or of the first; undefined when it has none. */
function primaryValue(resource: Record<string, unknown>, attribute: string): string | undefined {
  const entries = resource[attribute];
  if (entries === undefined || entries === null) return undefined;
  if (!Array.isArray(entries)) throw invalid(attribute, 'must be an array');
  for (const entry of entries) {
    if (!isObject(entry)) throw invalid(attribute, 'must hold objects');
    if (entry.value !== undefined && entry.value !== null && typeof entry.value !== 'string') throw invalid(`${attribute}.value`, 'must be a string');
  }
  const withValue = entries.filter((e) => typeof e.value === 'string') as { value: string; primary?: unknown }[];
  const primary = withValue.find((e) => e.primary === true || (typeof e.primary === 'string' && e.primary.toLowerCase() === 'true'));
  return (primary ?? withValue[0])?.value;
}

/**
 * Reads a User resource (POST, PUT, or a patched resource). `write` 'create' leaves unsaid attributes
 * to the service's defaults and rules; 'replace' clears what Latchkey can be without (names, phone,
 * externalId) and keeps the e-mail, which no user is without. @throws ScimError invalidValue
 */
export function readUserResource(resource: unknown, write: 'create' | 'replace'): UserResource {
  if (!isObject(resource)) throw new ScimError(400, 'invalidSyntax', 'the request body must be a JSON object');
  const username = optionalString(resource, 'userName');
  if (username === undefined && write === 'create') throw invalid('userName', 'is required');
  const name = resource.name ?? undefined;
  if (name !== undefined && name !== null && !isObject(name)) throw invalid('name', 'must be an object');
  const names = isObject(name) ? name : {};
  const orCleared = (value: string | undefined) => value ?? (write === 'replace' ? '' : undefined);
  const input: Omit<UserInput, 'username'> = {
    email: primaryValue(resource, 'emails'),
    firstName: orCleared(optionalString(names, 'name.givenName', 'givenName')),
    lastName: orCleared(optionalString(names, 'name.familyName', 'familyName')),
    phone: orCleared(primaryValue(resource, 'phoneNumbers')),
    password: optionalString(resource, 'password'),
    externalId: orCleared(optionalString(resource, 'externalId')),
    customAttributes: {},
  };
  const active = resource.active;
  const isEnabled = active === undefined || active === null ? (write === 'create' ? true : undefined) : readBoolean(active, 'active');
  return { username, input, isEnabled };
}

/**
 * The change to ask for: only what differs from `user` (two changes of different attributes at once
 * do not undo each other); the userName as given, which the service refuses to change.
 */
export function changedFrom(user: ProvisionedUser, resource: UserResource): UserChange {
  const { input } = resource;
  const differs = <T>(value: T | undefined, current: T) => (value !== undefined && value !== current ? value : undefined);
  return {
    input: {
      username: resource.username,
      email: differs(input.email, user.email),
      firstName: differs(input.firstName, user.firstName),
      lastName: differs(input.lastName, user.lastName),
      phone: differs(input.phone, user.phone),
      password: input.password,
      externalId: differs(input.externalId, user.externalId ?? ''),
      customAttributes: {},
    },
    isEnabled: differs(resource.isEnabled, !user.isDisabled),
  };
}
