/** Export records as text lines: CSV with a header row, or one JSON object a line; what the import reads. */
import { stringify } from 'csv-stringify/sync';
import type { ImportFormat } from './import-rows.ts';
import { neutraliseFormula } from './csv-formulas.ts';
import { exportColumns, type ExportRecord } from './export.ts';

function csvValue(record: ExportRecord, column: string): string {
  if (column === 'groups') return record.groups.join(';');
  if (column === 'passwordHash') return record.passwordHash ?? '';
  if (column.startsWith('customAttribute')) return record.customAttributes[column] ?? '';
  return record[column as 'username'];
}

/** A record's cells, each neutralised against spreadsheet formulas (csv-formulas.ts; import undoes it). */
function csvValues(record: ExportRecord, columns: string[]): string[] {
  return columns.map((column) => neutraliseFormula(csvValue(record, column)));
}

/** Attributes first and the record's own fields after: no attribute can shadow a field (export.ts keeps customAttributeN only). */
function jsonLine(record: ExportRecord): string {
  const { customAttributes, groups, passwordHash, ...fields } = record;
  return JSON.stringify({ ...customAttributes, ...fields, groups, ...(passwordHash !== undefined ? { passwordHash } : {}) }) + '\n';
}

/** The file's text, a line (CSV: a record) at a time. */
export async function* formatExport(records: AsyncIterable<ExportRecord>, format: ImportFormat, includePasswordHashes: boolean): AsyncGenerator<string> {
  if (format === 'jsonl') {
    for await (const record of records) yield jsonLine(record);
    return;
  }
  const columns = exportColumns(includePasswordHashes);
  yield stringify([columns]);
  for await (const record of records) yield stringify([csvValues(record, columns)]);
}
