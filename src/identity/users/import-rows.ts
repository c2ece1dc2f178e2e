/**
 * Reads an import file as a stream of records, each with the line it starts on (1-based, the CSV header
 * counted). Nothing holds more than a record at a time. A record that cannot be read (bad quoting, a
 * wrong number of fields, a line that is not a JSON object) comes out as an error, and reading goes on.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Transform, type Readable } from 'node:stream';
import { parse, type CsvError, type InfoRecord, type Options } from 'csv-parse';

export type ImportFormat = 'csv' | 'jsonl';

export type ImportRecord =
  | { line: number; values: Record<string, unknown>; error?: undefined }
  | { line: number; error: string; values?: undefined };

export class BadHeader extends Error {}

/**
 * Where each line starts, for the part of the file the parser has read but not yet handed out (the
 * breaks before the last record handed out are dropped, so this stays small). csv-parse's own line
 * count takes a CRLF inside a quoted field for two lines; its byte count is exact.
 */
function createLineIndex() {
  const breaks: { start: number; end: number }[] = [];
  let dropped = 0;
  let offset = 0;
  let pendingCr = -1;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        const at = offset + i;
        if (pendingCr >= 0) {
          breaks.push({ start: pendingCr, end: byte === 0x0a ? at + 1 : at });
          pendingCr = -1;
          if (byte === 0x0a) continue;
        }
        if (byte === 0x0d) pendingCr = at;
        else if (byte === 0x0a) breaks.push({ start: at, end: at + 1 });
      }
      offset += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      if (pendingCr >= 0) breaks.push({ start: pendingCr, end: pendingCr + 1 });
      done();
    },
  });
  return {
    tap,
    /** The 1-based line of the first non-empty line at or after `lineStart` (the end of the previous record). */
    lineAt(lineStart: number): number {
      while (breaks.length > 0 && breaks[0].end <= lineStart) { breaks.shift(); dropped++; }
      let start = lineStart;
      // Empty lines before the record are skipped by the parser.
      while (breaks.length > 0 && breaks[0].start === start) { start = breaks.shift()!.end; dropped++; }
      return dropped + 1;
    },
  };
}

interface ParsedRecord { line: number; fields: string[]; skippedBefore: ImportRecord[] }

/** @param checkHeader throws BadHeader to refuse the file before any record is read. */
export async function* readCsv(input: Readable, checkHeader: (columns: string[]) => void): AsyncGenerator<ImportRecord> {
  const lines = createLineIndex();
  // Lines are worked out as the parser goes (records and skips come in file order there): where the
  // last record parsed or skipped ended, the next one starts on the first non-empty line after.
  let recordEnd = 0;
  let skipped: ImportRecord[] = [];
  const options: Options<ParsedRecord, string[]> = {
    bom: true,
    // Files written on Windows, or pieced together from several sources, mix line breaks.
    record_delimiter: ['\r\n', '\n', '\r'],
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_record: (fields: string[], context: InfoRecord): ParsedRecord => {
      const line = lines.lineAt(recordEnd);
      recordEnd = context.bytes;
      const skippedBefore = skipped;
      skipped = [];
      return { line, fields, skippedBefore };
    },
    on_skip: (error: CsvError | undefined): undefined => {
      const failed = error as (CsvError & { bytes?: number }) | undefined;
      if (!failed) return undefined;
      const reason = failed.message.replace(/ (at|on) line \d+.*$/s, '');
      skipped.push({ line: lines.lineAt(recordEnd), error: `not a readable CSV record: ${reason}` });
      if (typeof failed.bytes === 'number') recordEnd = Math.max(recordEnd, failed.bytes);
      return undefined;
    },
  };
  const parser = input.pipe(lines.tap).pipe(parse(options as unknown as Options));
  let columns: string[] | undefined;
  for await (const item of parser as AsyncIterable<ParsedRecord>) {
    yield* item.skippedBefore;
    if (columns === undefined) {
      columns = item.fields.map((name) => name.trim());
      checkHeader(columns);
      continue;
    }
    const values: Record<string, string> = {};
    columns.forEach((name, i) => { values[name] = item.fields[i]; });
    yield { line: item.line, values };
  }
  yield* skipped;
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

/**
 * How many records the file holds, read once before the import (for its progress): non-empty lines, CSV
 * line breaks inside quotes not counted, the CSV header not counted. Streams: memory stays flat.
 */
export async function countRecords(path: string, format: ImportFormat): Promise<number> {
  let lines = 0;
  let lineHasText = false;
  let quoted = false;
  let previous = -1;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (const byte of chunk) {
      if (format === 'csv' && byte === 0x22) quoted = !quoted;
      const isBreak = !quoted && (byte === 0x0a || byte === 0x0d);
      if (isBreak) {
        // CRLF is one break; an empty line is no record (both readers skip it).
        if (lineHasText && !(byte === 0x0a && previous === 0x0d)) lines++;
        lineHasText = false;
      } else if (format === 'csv' ? true : byte !== 0x20 && byte !== 0x09) {
        lineHasText = true;
      }
      previous = byte;
    }
  }
  if (lineHasText) lines++;
  return format === 'csv' ? Math.max(0, lines - 1) : lines;
}

/** The file's records. @throws BadHeader (CSV) when its columns are not importable. */
export function readImportFile(path: string, format: ImportFormat, checkHeader: (columns: string[]) => void): AsyncGenerator<ImportRecord> {
  const input = createReadStream(path);
  return format === 'csv' ? readCsv(input, checkHeader) : readJsonLines(input);
}
