/**
 * A search condition over a record's named fields, free of any wire syntax and of SQL: a face turns
 * its query language into one (the SCIM filter, src/scim/filter.ts) and a repo compiles it to a
 * where clause (store/conditions.ts). The fields a record can be searched on are the repo's to name.
 */

/** Text comparisons: equal, not equal, contains, starts with, ends with (RFC 7644 §3.4.2.2's words). */
export type TextOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew';

export type Condition<F extends string> =
  | { op: 'and' | 'or'; conditions: Condition<F>[] }
  | { op: 'not'; condition: Condition<F> }
  | { op: TextOperator; field: F; value: string }
  /** The field has a value (not null, not empty). */
  | { op: 'pr'; field: F }
  | { op: 'is'; field: F; value: boolean };
