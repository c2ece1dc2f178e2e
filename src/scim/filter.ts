/**
 * SCIM filters (RFC 7644 §3.4.2.2) to search conditions: parsed by scim2-parse-filter, then mapped
 * attribute by attribute onto the fields a repo can search (lib/conditions.ts), which it compiles to
 * SQL with bound values. Refused as invalidFilter: what the parser refuses, an attribute or operator
 * not offered for it, a value of the wrong type, and filters too long or too deep to be a real query.
 */
import { parse, type Filter } from 'scim2-parse-filter';
import type { Condition, TextOperator } from '../lib/conditions.ts';
import { ScimError } from './errors.ts';

/** Longer than any directory's query; the parser's cost grows with the text. */
export const MAX_FILTER_LENGTH = 2000;
/** Nested and/or/not levels, and comparisons in one filter. */
const MAX_DEPTH = 10;
const MAX_COMPARISONS = 50;

/** How one attribute path (lower case, no schema URN) is searched: its field, the operators it offers. */
export interface FilterAttribute<F extends string> {
  field: F;
  /** Text comparisons offered (and `pr`); boolean attributes offer eq and ne with true or false. */
  operators: readonly (TextOperator | 'pr')[];
  type?: 'string' | 'boolean';
}

export type FilterAttributes<F extends string> = Record<string, FilterAttribute<F>>;

const ALL_TEXT: readonly (TextOperator | 'pr')[] = ['eq', 'ne', 'co', 'sw', 'ew', 'pr'];
export const TEXT_SEARCH = ALL_TEXT;
export const WHOLE_VALUE: readonly (TextOperator | 'pr')[] = ['eq', 'ne', 'pr'];

const invalid = (detail: string) => new ScimError(400, 'invalidFilter', detail);
const clip = (text: string) => (text.length > 64 ? `${text.slice(0, 64)}…` : text);

/** The attribute path lower-cased, without its core schema URN (`urn:…:core:2.0:User:userName` → `username`). */
function attributeKey(path: string, schema: string): string {
  const lower = path.toLowerCase();
  const prefix = `${schema.toLowerCase()}:`;
  return lower.startsWith(prefix) ? lower.slice(prefix.length) : lower;
}

function toCondition<F extends string>(filter: Filter, attributes: FilterAttributes<F>, schema: string, prefix: string, depth: number, count: { n: number }): Condition<F> {
  if (depth > MAX_DEPTH) throw invalid(`the filter nests deeper than ${MAX_DEPTH} levels`);
  switch (filter.op) {
    case 'and':
    case 'or':
      return { op: filter.op, conditions: (filter as { filters: Filter[] }).filters.map((f) => toCondition(f, attributes, schema, prefix, depth + 1, count)) };
    case 'not':
      return { op: 'not', condition: toCondition((filter as { filter: Filter }).filter, attributes, schema, prefix, depth + 1, count) };
    case '[]': {
      // emails[value eq "…"]: the inner filter's attributes are sub-attributes of the outer one.
      if (prefix) throw invalid('a value filter cannot hold another');
      const { attrPath, valFilter } = filter as { attrPath: string; valFilter: Filter };
      return toCondition(valFilter, attributes, schema, `${attributeKey(attrPath, schema)}.`, depth + 1, count);
    }
    default: {
      if (++count.n > MAX_COMPARISONS) throw invalid(`the filter holds more than ${MAX_COMPARISONS} comparisons`);
      const { op, attrPath } = filter as { op: string; attrPath: string };
      const key = prefix + attributeKey(attrPath, schema);
      const attribute = attributes[key];
      if (!attribute) throw invalid(`filtering on ${clip(prefix + attrPath)} is not supported`);
      if (!(attribute.operators as readonly string[]).includes(op)) throw invalid(`the operator ${op} is not supported on ${clip(prefix + attrPath)}`);
      if (op === 'pr') return { op: 'pr', field: attribute.field };
      const value = (filter as { compValue: unknown }).compValue;
      if (attribute.type === 'boolean') {
        if (typeof value !== 'boolean') throw invalid(`${clip(prefix + attrPath)} is compared with true or false`);
        return { op: 'is', field: attribute.field, value: op === 'eq' ? value : !value };
      }
      if (typeof value !== 'string') throw invalid(`${clip(prefix + attrPath)} is compared with a quoted string`);
      return { op: op as TextOperator, field: attribute.field, value };
    }
  }
}

/**
 * The condition a filter expresses over `attributes` (keys: lower-case attribute paths).
 * @throws ScimError invalidFilter
 */
export function parseFilter<F extends string>(text: unknown, attributes: FilterAttributes<F>, schema: string): Condition<F> {
  if (typeof text !== 'string') throw invalid('filter must be given once, as text');
  if (text.length > MAX_FILTER_LENGTH) throw invalid(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  let filter: Filter;
  try {
    filter = parse(text);
  } catch {
    // The parser's messages echo the filter: a fixed detail instead.
    throw invalid('the filter is not a valid SCIM filter expression');
  }
  return toCondition(filter, attributes, schema, '', 0, { n: 0 });
}
