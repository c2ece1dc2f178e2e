/**
 * A Latchkey group as a SCIM Group (RFC 7643 §4.2) and back: displayName ↔ the group's name,
 * members [{value: the user's id (guid), display: userName, $ref}] ↔ memberships, externalId kept.
 */
import type { MemberRef } from '../../identity/groups/provisioning.ts';
import type { Group } from '../../identity/groups/types.ts';
import { ScimError } from '../errors.ts';
import { resourceMeta } from '../meta.ts';
import { GROUP_RESOURCE, GROUP_SCHEMA, USER_RESOURCE } from '../schemas.ts';

/** `members` undefined: left out of the answer (excludedAttributes=members). */
export function toScimGroup(group: Group, members: MemberRef[] | undefined, baseUrl: string): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: String(group.id),
    ...(group.externalId ? { externalId: group.externalId } : {}),
    displayName: group.name,
    ...(members ? { members: members.map((m) => ({ value: m.guid, display: m.username, $ref: `${baseUrl}${USER_RESOURCE.endpoint}/${m.guid}` })) } : {}),
    meta: resourceMeta(GROUP_RESOURCE, baseUrl, String(group.id), group),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The user ids (guids) of a members value: an array of {value} (a single object is taken as one). @throws ScimError invalidValue */
export function readMemberGuids(value: unknown, attribute = 'members'): string[] {
  const entries = Array.isArray(value) ? value : isObject(value) ? [value] : undefined;
  if (!entries) throw new ScimError(400, 'invalidValue', `${attribute} must be an array of {"value": "<user id>"}`);
  return entries.map((entry) => {
    if (!isObject(entry) || typeof entry.value !== 'string' || entry.value === '') {
      throw new ScimError(400, 'invalidValue', `${attribute} must be an array of {"value": "<user id>"}`);
    }
    return entry.value;
  });
}

export interface GroupResource { name: string; externalId?: string; memberGuids: string[] }

/** A Group resource of POST or PUT. @throws ScimError invalidSyntax, invalidValue */
export function readGroupResource(resource: unknown): GroupResource {
  if (!isObject(resource)) throw new ScimError(400, 'invalidSyntax', 'the request body must be a JSON object');
  if (typeof resource.displayName !== 'string') throw new ScimError(400, 'invalidValue', 'displayName is required (a string)');
  const externalId = resource.externalId;
  if (externalId !== undefined && externalId !== null && typeof externalId !== 'string') throw new ScimError(400, 'invalidValue', 'externalId must be a string');
  const members = resource.members === undefined || resource.members === null ? [] : readMemberGuids(resource.members);
  return { name: resource.displayName, ...(typeof externalId === 'string' ? { externalId } : {}), memberGuids: members };
}
