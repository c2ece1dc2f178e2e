/**
 * The PATCH request body (RFC 7644 §3.5.2) read into operations: the PatchOp schema, a non-empty
 * Operations list, each op add, replace or remove in any case (Entra ID sends "Replace"), a path
 * or, without one, a value object whose members become one operation each (Okta's
 * {"op":"replace","value":{"active":false}}). What each path may name is the resource's to check.
 */
import { ScimError } from './errors.ts';
import { COMMON_READ_ONLY, PATCH_OP_SCHEMA } from './schemas.ts';

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
  /** The operation had a value but no path (its value's member became `path`). */
  fromValueObject: boolean;
}

/** Operations one request may hold. */
export const MAX_OPERATIONS = 100;

const syntax = (detail: string) => new ScimError(400, 'invalidSyntax', detail);
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** @throws ScimError invalidSyntax, invalidValue, noTarget */
export function readPatchBody(body: unknown): PatchOperation[] {
  if (!isObject(body)) throw syntax('the request body must be a JSON object');
  const schemas = body.schemas;
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_OP_SCHEMA)) throw syntax(`schemas must hold ${PATCH_OP_SCHEMA}`);
  const operations = body.Operations;
  if (!Array.isArray(operations) || operations.length === 0) throw syntax('Operations must be a non-empty array');
  if (operations.length > MAX_OPERATIONS) throw new ScimError(400, 'tooMany', `Operations must NOT have more than ${MAX_OPERATIONS} items`);
  const read: PatchOperation[] = [];
  for (const [i, operation] of operations.entries()) {
    if (!isObject(operation)) throw syntax(`Operations[${i}] must be an object`);
    const op = typeof operation.op === 'string' ? operation.op.toLowerCase() : undefined;
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw syntax(`Operations[${i}].op must be add, replace or remove`);
    const path = operation.path;
    if (path !== undefined && path !== null && (typeof path !== 'string' || path.trim() === '')) throw new ScimError(400, 'invalidPath', `Operations[${i}].path must be a non-empty string`);
    if (typeof path === 'string') {
      read.push({ op, path: path.trim(), ...('value' in operation ? { value: operation.value } : {}), fromValueObject: false });
      continue;
    }
    // §3.5.2.2: a remove names its target.
    if (op === 'remove') throw new ScimError(400, 'noTarget', `Operations[${i}] removes without a path`);
    if (!isObject(operation.value)) throw new ScimError(400, 'invalidValue', `Operations[${i}].value must be an object when there is no path`);
    for (const [name, value] of Object.entries(operation.value)) {
      // The resource's own id, meta and schemas may ride along (Okta sends the group's id): not changes.
      if (COMMON_READ_ONLY.has(name.toLowerCase())) continue;
      read.push({ op, path: name, value, fromValueObject: true });
    }
  }
  return read;
}

/** An attribute path split: its schema URN (lower case, "" for none), attribute, [filter] and .sub-attribute. */
export interface SplitPath {
  urn: string;
  attribute: string;
  filter?: string;
  sub?: string;
}

const PATH = /^([A-Za-z$][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s;

/** Splits `path` after a schema URN, if it starts with one of `urns` (any case). @throws ScimError invalidPath */
export function splitPath(path: string, urns: readonly string[]): SplitPath {
  const lower = path.toLowerCase();
  const urn = urns.find((u) => lower.startsWith(`${u.toLowerCase()}:`));
  const rest = urn ? path.slice(urn.length + 1) : path;
  if (!urn && lower.startsWith('urn:')) throw new ScimError(400, 'invalidPath', `the path names an unknown schema: ${clip(path)}`);
  const match = PATH.exec(rest);
  if (!match) throw new ScimError(400, 'invalidPath', `the path is not a valid attribute path: ${clip(path)}`);
  return { urn: urn?.toLowerCase() ?? '', attribute: match[1], filter: match[2], sub: match[3] };
}

export const clip = (text: string) => (text.length > 64 ? `${text.slice(0, 64)}…` : text);
