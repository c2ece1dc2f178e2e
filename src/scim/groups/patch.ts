/**
 * PATCH of a Group, applied without reading the group's members: displayName and externalId are
 * set or cleared; `members` add, remove (with a value list, or all without one) and replace, and
 * `members[value eq "…"]` (or several eq joined by or) removes those members. Anything else in a
 * path is invalidPath; id and meta are read only (mutability).
 */
import { parse, type Filter } from 'scim2-parse-filter';
import type { GroupChange, MemberChange } from '../../identity/groups/provisioning.ts';
import { ScimError } from '../errors.ts';
import { clip, splitPath, type PatchOperation } from '../patch.ts';
import { COMMON_READ_ONLY, GROUP_SCHEMA } from '../schemas.ts';
import { readMemberGuids } from './mapping.ts';

const invalidPath = (path: string) => new ScimError(400, 'invalidPath', `the path names no attribute of a Group: ${clip(path)}`);

/** The user ids a members filter names: `value eq "…"`, alone or joined by or. */
function guidsOfFilter(text: string, path: string): string[] {
  let filter: Filter;
  try { filter = parse(text); } catch { throw new ScimError(400, 'invalidPath', `the path's value filter is not valid: ${clip(path)}`); }
  const guids: string[] = [];
  const walk = (f: Filter): void => {
    if (f.op === 'or') return (f as { filters: Filter[] }).filters.forEach(walk);
    const compare = f as { op: string; attrPath?: string; compValue?: unknown };
    if (compare.op === 'eq' && compare.attrPath?.toLowerCase() === 'value' && typeof compare.compValue === 'string') {
      guids.push(compare.compValue);
      return;
    }
    throw new ScimError(400, 'invalidPath', `a members filter names members by value eq "<user id>": ${clip(path)}`);
  };
  walk(filter);
  return guids;
}

function readText(value: unknown, attribute: string): string {
  if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', `${attribute} must be a string`);
  return value;
}

/** The change the operations ask for, in order. @throws ScimError invalidPath, mutability, invalidValue */
export function readGroupPatch(operations: PatchOperation[]): GroupChange {
  const change: GroupChange = {};
  const members: MemberChange[] = [];
  for (const { op, path, value } of operations) {
    const split = splitPath(path, [GROUP_SCHEMA]);
    const attribute = split.attribute.toLowerCase();
    if (COMMON_READ_ONLY.has(attribute)) throw new ScimError(400, 'mutability', `${split.attribute} is read only`);
    if (attribute === 'displayname' && split.filter === undefined && split.sub === undefined) {
      if (op === 'remove') throw new ScimError(400, 'mutability', 'displayName is required and cannot be removed');
      change.name = readText(value, 'displayName');
    } else if (attribute === 'externalid' && split.filter === undefined && split.sub === undefined) {
      change.externalId = op === 'remove' ? '' : readText(value, 'externalId');
    } else if (attribute === 'members' && split.sub === undefined) {
      if (split.filter !== undefined) {
        // members[value eq "…"]: only a remove can name members by filter.
        if (op !== 'remove') throw invalidPath(path);
        members.push({ op: 'remove', guids: guidsOfFilter(split.filter, path) });
      } else if (op === 'remove') {
        members.push(value === undefined || value === null ? { op: 'removeAll' } : { op: 'remove', guids: readMemberGuids(value) });
      } else {
        members.push({ op, guids: value === null ? [] : readMemberGuids(value) });
      }
    } else {
      throw invalidPath(path);
    }
  }
  if (members.length > 0) change.members = members;
  return change;
}
