/**
 * Reads an import file as a stream of records, each with the line it starts on (1-based, the CSV header
 * counted). Nothing holds more than a record at a time. A record that cannot be read (bad quoting, a
 * wrong number of fields, a line that is not a JSON object) comes out as an error, and reading goes on.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';

export type ImportFormat = 'csv' | 'jsonl';

export type ImportRecord =
  | { line: number; values: Record<string, unknown>; error?: undefined }
  | { line: number; error: string; values?: undefined };

/** The format a file name says, or undefined (`--format` must then say). */
export function formatOfFileName(name: string): ImportFormat | undefined {
  if (/\.csv$/i.test(name)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(name)) return 'jsonl';
  return undefined;
}

export class BadHeader extends Error {}

const NEWLINES = /\r\n|\r|\n/g;
const countNewlines = (text: string): number => text.match(NEWLINES)?.length ?? 0;

/**
 * csv-parse reports the line a record ends on; the start is that minus the line breaks inside it
 * (its raw text, without the empty lines skipped before it and its own line break).
 */
function startLine(endLine: number, raw: string): number {
  return endLine - countNewlines(raw.replace(/^[\r\n]+/, '').replace(/(\r\n|\r|\n)$/, ''));
}

/** @param checkHeader throws BadHeader to refuse the file before any record is read. */
export async function* readCsv(input: Readable, checkHeader: (columns: string[]) => void): AsyncGenerator<ImportRecord> {
  const skipped: ImportRecord[] = [];
  const parser = input.pipe(parse({
    bom: true,
    columns: (header: string[]) => {
      const columns = header.map((name) => name.trim());
      checkHeader(columns);
      return columns;
    },
    // Files written on Windows, or pieced together from several sources, mix line breaks.
    record_delimiter: ['\r\n', '\n', '\r'],
    skip_empty_lines: true,
    info: true,
    raw: true,
    skip_records_with_error: true,
    on_skip: (error) => {
      if (error) skipped.push({ line: Number((error as { lines?: number }).lines), error: `not a readable CSV record: ${error.message.replace(/ at line \d+.*$/s, '')}` });
    },
  }));
  // A header refused in `columns` is an error of the stream: surface it, not as a record.
  let headerError: unknown;
  parser.on('error', (error) => { headerError ??= error; });
  try {
    for await (const item of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number }; raw: string }>) {
      while (skipped.length) yield skipped.shift()!;
      yield { line: startLine(item.info.lines, item.raw), values: item.record };
    }
  } catch (error) {
    throw unwrapHeaderError(headerError ?? error);
  }
  while (skipped.length) yield skipped.shift()!;
}

function unwrapHeaderError(error: unknown): unknown {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  if (error instanceof BadHeader) return error;
  if (cause instanceof BadHeader) return cause;
  return error;
}

export async function* readJsonLines(input: Readable): AsyncGenerator<ImportRecord> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  for await (let text of lines) {
    line++;
    if (line === 1 && text.startsWith('\ufeff')) text = text.slice(1);
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      yield { line, error: 'not a JSON object' };
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) yield { line, error: 'not a JSON object' };
    else yield { line, values: value as Record<string, unknown> };
  }
}

/** The file's records. @throws BadHeader (CSV) when its columns are not importable. */
export function readImportFile(path: string, format: ImportFormat, checkHeader: (columns: string[]) => void): AsyncGenerator<ImportRecord> {
  const input = createReadStream(path);
  return format === 'csv' ? readCsv(input, checkHeader) : readJsonLines(input);
}
