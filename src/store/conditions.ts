/**
 * Compiles a lib/conditions.ts Condition to a Kysely expression over columns a repo names. Values are
 * always bound parameters, never SQL text; LIKE patterns escape their own % _ and \. Columns marked
 * `normalised` hold trimmed lower-case text (username_norm, email_norm, name_norm): the value is
 * lower-cased here so the comparison ignores case and stays on the column's index.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Condition } from '../lib/conditions.ts';

export interface ConditionColumn {
  /** The column as SQL names it, table included (`users.username_norm`). */
  column: string;
  /** Holds trimmed lower-case text: compared ignoring case. Otherwise compared exactly (caseExact). */
  normalised?: boolean;
  /** A 0/1 column searched with `is` (true/false), or, with `inverted`, its negation (disabled ↔ active). */
  flag?: { inverted?: boolean };
}

/** A custom comparison: the field's own SQL (a membership lookup), given the operator and value. */
export type ConditionCompiler = (op: 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'pr', value: string) => Expression<SqlBool>;

export type ConditionColumns<F extends string> = Record<F, ConditionColumn | ConditionCompiler>;

/** `%` `_` and `\` stand for themselves in the pattern (ESCAPE '\'). */
const likeLiteral = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

// Sorts after every character a name can hold: [v, v + HIGH) is "starts with v" as an index range.
const HIGH = '\u{10FFFF}';

function compare(column: ConditionColumn, op: 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'pr', raw: string): Expression<SqlBool> {
  const ref = sql.ref(column.column);
  if (op === 'pr') return sql<SqlBool>`(${ref} is not null and ${ref} <> '')`;
  const value = column.normalised ? (op === 'eq' || op === 'ne' ? raw.trim() : raw).toLowerCase() : raw;
  switch (op) {
    case 'eq': return sql<SqlBool>`${ref} = ${value}`;
    case 'ne': return sql<SqlBool>`(${ref} is null or ${ref} <> ${value})`;
    case 'sw': return column.normalised
      ? sql<SqlBool>`(${ref} >= ${value} and ${ref} < ${value + HIGH})`
      : sql<SqlBool>`substr(${ref}, 1, ${[...value].length}) = ${value}`;
    case 'ew': return column.normalised
      ? sql<SqlBool>`${ref} like ${`%${likeLiteral(value)}`} escape '\\'`
      // SQLite's LIKE ignores ASCII case: a caseExact column is compared by its tail instead.
      : sql<SqlBool>`(length(${ref}) >= ${[...value].length} and substr(${ref}, length(${ref}) - ${[...value].length - 1}) = ${value})`;
    case 'co': return column.normalised
      ? sql<SqlBool>`${ref} like ${`%${likeLiteral(value)}%`} escape '\\'`
      // Portable and case-exact: the text holds the value when removing it changes the text.
      : value === '' ? sql<SqlBool>`${ref} is not null` : sql<SqlBool>`replace(${ref}, ${value}, '') <> ${ref}`;
  }
}

/** The where expression of `condition`; `columns` says which column (or SQL) each field is. */
export function compileCondition<F extends string>(
  // Any table's builder: the columns name their own tables.
  eb: ExpressionBuilder<any, any>,
  condition: Condition<F>,
  columns: ConditionColumns<F>,
): Expression<SqlBool> {
  switch (condition.op) {
    case 'and': return eb.and(condition.conditions.map((c) => compileCondition(eb, c, columns)));
    case 'or': return eb.or(condition.conditions.map((c) => compileCondition(eb, c, columns)));
    case 'not': return eb.not(compileCondition(eb, condition.condition, columns));
    default: {
      const target = columns[condition.field];
      if (typeof target === 'function') return target(condition.op === 'is' ? 'eq' : condition.op, 'value' in condition ? String(condition.value) : '');
      if (condition.op === 'is') {
        const wanted = target.flag?.inverted ? !condition.value : condition.value;
        return sql<SqlBool>`${sql.ref(target.column)} = ${wanted ? 1 : 0}`;
      }
      return compare(target, condition.op, condition.op === 'pr' ? '' : condition.value);
    }
  }
}
