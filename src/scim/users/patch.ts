/**
 * PATCH of a User: each operation's path checked against the attributes Latchkey keeps (RFC 7643
 * §4.1), written in their canonical case, then applied by scim-patch to the user as a resource; the
 * patched resource is read back like a PUT body. Paths of standard attributes Latchkey does not keep
 * (displayName, title, the enterprise extension…) are accepted and ignored; id, meta and groups are
 * read only (mutability); anything else is invalidPath.
 */
import { parse } from 'scim2-parse-filter';
import { scimPatch, ScimError as PatchError, type ScimPatchOperation, type ScimResource } from 'scim-patch';
import { ScimError, type ScimType } from '../errors.ts';
import { clip, splitPath, type PatchOperation } from '../patch.ts';
import { COMMON_READ_ONLY, ENTERPRISE_USER_SCHEMA, IGNORED_NAME_PARTS, IGNORED_USER_ATTRIBUTES, USER_SCHEMA } from '../schemas.ts';

/** Kept attributes, lower case → canonical, with their sub-attributes (lower case → canonical). */
const KEPT: Record<string, { name: string; subs?: Record<string, string>; multiValued?: boolean }> = {
  username: { name: 'userName' },
  name: { name: 'name', subs: { givenname: 'givenName', familyname: 'familyName' } },
  emails: { name: 'emails', multiValued: true, subs: { value: 'value', type: 'type', primary: 'primary', display: 'display' } },
  phonenumbers: { name: 'phoneNumbers', multiValued: true, subs: { value: 'value', type: 'type', primary: 'primary', display: 'display' } },
  active: { name: 'active' },
  password: { name: 'password' },
  externalid: { name: 'externalId' },
};

const invalidPath = (path: string) => new ScimError(400, 'invalidPath', `the path names no attribute of a User: ${clip(path)}`);

/** The path in canonical case, or 'ignored'. @throws ScimError invalidPath, mutability */
export function checkUserPath(path: string): string | 'ignored' {
  const split = splitPath(path, [ENTERPRISE_USER_SCHEMA, USER_SCHEMA]);
  if (split.urn === ENTERPRISE_USER_SCHEMA.toLowerCase()) return 'ignored';
  const attribute = split.attribute.toLowerCase();
  if (COMMON_READ_ONLY.has(attribute) || attribute === 'groups') throw new ScimError(400, 'mutability', `${split.attribute} is read only`);
  if (IGNORED_USER_ATTRIBUTES.has(attribute)) return 'ignored';
  const kept = KEPT[attribute];
  if (!kept) throw invalidPath(path);
  if (split.filter !== undefined) {
    if (!kept.multiValued) throw invalidPath(path);
    try { parse(split.filter); } catch { throw new ScimError(400, 'invalidPath', `the path's value filter is not valid: ${clip(path)}`); }
  }
  let sub = '';
  if (split.sub !== undefined) {
    const lower = split.sub.toLowerCase();
    if (attribute === 'name' && IGNORED_NAME_PARTS.has(lower)) return 'ignored';
    const canonical = kept.subs?.[lower];
    if (!canonical) throw invalidPath(path);
    sub = `.${canonical}`;
  }
  return `${kept.name}${split.filter !== undefined ? `[${split.filter}]` : ''}${sub}`;
}

/**
 * The operations applied to `resource` (left unchanged): the patched copy.
 * @throws ScimError invalidPath, mutability, noTarget, invalidValue, invalidSyntax
 */
export function patchUserResource(resource: Record<string, unknown>, operations: PatchOperation[]): Record<string, unknown> {
  const kept: ScimPatchOperation[] = [];
  for (const operation of operations) {
    const path = checkUserPath(operation.path);
    if (path === 'ignored') continue;
    kept.push({ op: operation.op, path, ...('value' in operation ? { value: operation.value } : {}) } as ScimPatchOperation);
  }
  if (kept.length === 0) return resource;
  try {
    return scimPatch(resource as unknown as ScimResource, kept, { mutateDocument: false, treatMissingAsAdd: true }) as unknown as Record<string, unknown>;
  } catch (error) {
    if (error instanceof PatchError) throw new ScimError(400, (error.scimCode as ScimType | undefined) ?? 'invalidValue', error.message);
    // A value of a shape the operation cannot apply (an object into a string, …).
    throw new ScimError(400, 'invalidValue', 'an operation\'s value does not fit its path');
  }
}
