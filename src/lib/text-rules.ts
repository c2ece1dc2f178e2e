/**
 * Text rules as data: a domain module states its limits once (users/rules.ts, groups/rules.ts, …),
 * checks them on every write whoever calls, and a face's JSON schema repeats them by reading the same
 * constants (textSchema). Reasons are worded as the admin API's schema validation words them (Ajv), so
 * every face shows the same reason for the same value.
 */
import { Invalid } from './errors.ts';

export interface TextRule {
  readonly minLength?: number;
  readonly maxLength: number;
  /** A JSON-schema pattern, run as Ajv runs it (ECMAScript, unicode mode). */
  readonly pattern?: string;
}

/** A rule a value breaks: the field, and the reason (the text after the field name). */
export interface BrokenRule {
  field: string;
  reason: string;
}

/** A trimmed, non-empty single line: no leading or trailing white space, no line break inside. */
export const TRIMMED_LINE = '^\\S(.*\\S)?$';

// As http/input-checks.ts refuses them in every admin API body, before its schema: C0 controls
// (TAB, CR, LF and NUL included) and DEL have no place in identity data and start header and log
// injection; a lone surrogate is text that is not Unicode (the database would store U+FFFD).
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export const CONTROL_CHARACTERS_REASON = 'must not contain control characters';

const patterns = new Map<string, RegExp>();
function compiled(pattern: string): RegExp {
  let regex = patterns.get(pattern);
  if (!regex) {
    regex = new RegExp(pattern, 'u');
    patterns.set(pattern, regex);
  }
  return regex;
}

/** Length in code points, as JSON schema (and Ajv) count it: an emoji is one character. */
function codePointLength(value: string): number {
  let length = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    length++;
  }
  return length;
}

/** The reason `value` breaks the text rules common to every field (control characters, Unicode), or undefined. */
export function badCharacters(value: string): string | undefined {
  if (CONTROL.test(value)) return CONTROL_CHARACTERS_REASON;
  if (LONE_SURROGATE.test(value)) return 'must be valid Unicode text';
  return undefined;
}

/** The first rule `value` breaks, in the order the admin API checks them (characters, length, pattern). */
export function checkText(field: string, value: string, rule: TextRule): BrokenRule | undefined {
  const characters = badCharacters(value);
  if (characters) return { field, reason: characters };
  const length = codePointLength(value);
  if (length > rule.maxLength) return { field, reason: `must NOT have more than ${rule.maxLength} characters` };
  if (rule.minLength !== undefined && length < rule.minLength) return { field, reason: `must NOT have fewer than ${rule.minLength} characters` };
  if (rule.pattern !== undefined && !compiled(rule.pattern).test(value)) return { field, reason: `must match pattern "${rule.pattern}"` };
  return undefined;
}

/** The first broken rule of `checks`, run in order; undefined when all hold. */
export function findFirstBroken(...checks: (() => BrokenRule | undefined)[]): BrokenRule | undefined {
  for (const check of checks) {
    const broken = check();
    if (broken) return broken;
  }
  return undefined;
}

/** @throws Invalid naming the field and the reason, when a rule is broken. */
export function enforce(broken: BrokenRule | undefined): void {
  if (broken) throw new Invalid(broken.field, broken.reason);
}

/** A JSON schema for a string field that repeats `rule`'s limits (a face's wire shape reads them from here). */
export function textSchema(rule: TextRule) {
  return {
    type: 'string' as const,
    ...(rule.minLength !== undefined ? { minLength: rule.minLength } : {}),
    maxLength: rule.maxLength,
    ...(rule.pattern !== undefined ? { pattern: rule.pattern } : {}),
  };
}

/** Caller-chosen names are echoed in reasons: keep them short. */
export const clipName = (name: string): string => (name.length > 64 ? `${name.slice(0, 64)}…` : name);
