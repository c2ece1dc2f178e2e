import type { ColumnDefinitionBuilder, CreateTableBuilder } from 'kysely';
import type { Dialect } from '../db.ts';

/** An auto-increment integer primary key, spelled as each dialect wants it. */
export function withId<T extends string>(table: CreateTableBuilder<T, never>, dialect: Dialect): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres'
    ? table.addColumn('id', 'bigserial', (c) => c.primaryKey())
    : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}

/** Epoch milliseconds need 64 bits. */
export const instant = 'bigint' as const;

export const notNull = (c: ColumnDefinitionBuilder) => c.notNull();
